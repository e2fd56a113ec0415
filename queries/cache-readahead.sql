-- cache-readahead: readahead windows by process and file: windows started, pages asked for, of them asynchronous, per window.
-- readahead:page_cache_ra_order fires once per readahead window (synchronous on a miss,
-- asynchronous on reaching a marked page) with its size in pages, before it is cut at the
-- end of the file: pages is what readahead asked for; cache-misses has what it added.
SELECT pid, comm, s_dev AS dev, s_dev >> 20 AS major, s_dev & 1048575 AS minor, i_ino AS inode,
       COUNT(*) AS windows, SUM(size) AS pages, SUM(async_size) AS async_pages, MAX(order) AS max_order
FROM readahead.page_cache_ra_order
GROUP BY pid, comm, s_dev, i_ino
ORDER BY pages DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
