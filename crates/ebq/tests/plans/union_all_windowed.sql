-- UNION ALL: branches with their own filters, summed per window (cachestat shape).
SELECT SUM(acc) AS accesses, SUM(miss) AS misses FROM (SELECT last_index - index + 1 AS acc, 0 AS miss FROM filemap.mm_filemap_get_pages UNION ALL SELECT 0 AS acc, 1 << order AS miss FROM filemap.mm_filemap_add_to_page_cache) c WINDOW(time, 1000)
