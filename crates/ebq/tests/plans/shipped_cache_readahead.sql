-- Shipped query cache-readahead: readahead windows per file and window.
SELECT pid, comm, s_dev AS dev, i_ino AS inode, COUNT(*) AS windows, SUM(size) AS pages, MAX(order) AS max_order FROM readahead.page_cache_ra_order GROUP BY pid, comm, s_dev, i_ino ORDER BY pages DESC LIMIT 20 WINDOW(time, 1000)
