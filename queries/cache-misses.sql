-- cache-misses: pages added to the page cache by process and file (cachestat's misses, readahead included), per window.
-- filemap:mm_filemap_add_to_page_cache fires once per folio inserted (a read miss, readahead,
-- or a write to a page not cached); a folio of order n holds 2^n pages.
SELECT pid, comm, s_dev AS dev, s_dev >> 20 AS major, s_dev & 1048575 AS minor, i_ino AS inode,
       COUNT(*) AS folios, SUM(1 << order) AS pages, SUM(1 << order) * 4096 AS bytes
FROM filemap.mm_filemap_add_to_page_cache
GROUP BY pid, comm, s_dev, i_ino
ORDER BY pages DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
