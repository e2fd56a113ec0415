-- mmap-faultaround: fault-around on file-backed mappings by process and file: pages mapped from the cache around a fault, per window.
-- filemap:mm_filemap_map_pages fires once per fault-around pass with the page range it walked
-- (first page to the last cached folio it looked at). `pages` is what the passes mapped, counted
-- exactly (`pages_mapped`: the process's file pages at the pass less at its fault); `walked` is
-- the ranges' total, an upper bound, as successive ranges overlap and skip pages already mapped.
-- With mmap-faults' pages this is every page brought into the mapping.
SELECT pid, comm, dev, dev >> 20 AS major, dev & 1048575 AS minor, inode, file_name,
       COUNT(*) AS passes, SUM(pages_mapped) AS pages, SUM(pages_mapped) * 4096 AS bytes,
       SUM(last_index - index + 1) AS walked
FROM filemap.mm_filemap_map_pages
GROUP BY pid, comm, dev, inode, file_name
ORDER BY pages DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
