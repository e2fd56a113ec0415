-- cachetop: page-cache accesses, misses, hits and dirtied folios per process and file, busiest first, per window (cachetop from tracepoints).
-- The events and their contributions are cachestat's (one UNION ALL, one program per event, one
-- group map; hits = accesses - misses, negative when readahead adds more pages than were asked for).
-- A file is its device (kernel dev_t, major << 20 | minor) and inode; a dirtied folio's backing
-- device is named, not numbered, by its tracepoint, so its dev is 0.
SELECT pid, comm, dev, inode, SUM(acc) AS accesses, SUM(miss) AS misses, SUM(hit) AS hits, SUM(dirty) AS dirtied
FROM (SELECT s_dev AS dev, i_ino AS inode, last_index - index + 1 AS acc, 0 AS miss,
             -(index - last_index - 1) AS hit, 0 AS dirty
      FROM filemap.mm_filemap_get_pages
      UNION ALL SELECT s_dev AS dev, i_ino AS inode, 0 AS acc, 1 << order AS miss, -(1 << order) AS hit, 0 AS dirty
      FROM filemap.mm_filemap_add_to_page_cache
      UNION ALL SELECT 0 AS dev, ino AS inode, 0 AS acc, 0 AS miss, 0 AS hit, 1 AS dirty
      FROM writeback.writeback_dirty_folio) c
GROUP BY pid, comm, dev, inode
ORDER BY accesses DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
