-- cache-reads: reads through the page cache by process and file (cachetop's accesses), busiest first, per window.
-- filemap:mm_filemap_get_pages fires once per batch of pages a read takes from the cache
-- (any read path: read, pread, readv, splice, sendfile, exec); pages are the range it asked
-- for, exact for reads of at most one page (a larger read may ask again for a tail it was
-- already counted for). dev is the kernel dev_t (major << 20 | minor).
SELECT pid, comm, s_dev AS dev, s_dev >> 20 AS major, s_dev & 1048575 AS minor, i_ino AS inode,
       COUNT(*) AS lookups, SUM(last_index - index + 1) AS pages
FROM filemap.mm_filemap_get_pages
GROUP BY pid, comm, s_dev, i_ino
ORDER BY pages DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
