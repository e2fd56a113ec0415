-- View: io.ops' mmap path on a 6.2+ kernel (filemap faults, fault-around and rss_stat finishes).
-- kernel: typed
SELECT path, file_name, COUNT(*), SUM(bytes) FROM io.ops WHERE path = 'mmap' GROUP BY path, file_name
