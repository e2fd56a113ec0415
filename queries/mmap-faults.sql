-- mmap-faults: page faults on file-backed mappings by process and file, in pages and bytes, per window.
-- filemap:mm_filemap_fault fires once per fault filemap_fault serves (one page, read in when
-- not cached; pages = faults); the pages mapped around it without a fault are in mmap-faultaround.
SELECT pid, comm, s_dev AS dev, s_dev >> 20 AS major, s_dev & 1048575 AS minor, i_ino AS inode,
       COUNT(*) AS faults, COUNT(*) AS pages, COUNT(*) * 4096 AS bytes
FROM filemap.mm_filemap_fault
GROUP BY pid, comm, s_dev, i_ino
ORDER BY faults DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
