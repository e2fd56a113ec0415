-- mmap-faultaround: fault-around on file-backed mappings by process and file: pages mapped from the cache around a fault, per window.
-- filemap:mm_filemap_map_pages fires once per fault-around pass with the page range it walked
-- (first page to the last cached folio it mapped); successive windows may overlap by the pages
-- already mapped, so pages (the ranges' total) is an upper bound and bytes = pages * 4096.
SELECT pid, comm, s_dev AS dev, s_dev >> 20 AS major, s_dev & 1048575 AS minor, i_ino AS inode,
       COUNT(*) AS passes, SUM(last_index - index + 1) AS pages, SUM(last_index - index + 1) * 4096 AS bytes
FROM filemap.mm_filemap_map_pages
GROUP BY pid, comm, s_dev, i_ino
ORDER BY pages DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
