-- cachestat: page-cache accesses, misses, hits, hit ratio and dirtied folios, per window (libbpf-tools cachestat from tracepoints: its fentry probes do not load here).
-- One UNION ALL, one program per event, one group map: accesses are the pages a read asks of the
-- cache (filemap:mm_filemap_get_pages, last_index - index + 1: exact for reads of at most one page),
-- misses the pages added to it (filemap:mm_filemap_add_to_page_cache, 2^order per folio, readahead
-- included), dirtied the folios made dirty (writeback:writeback_dirty_folio). Each event adds a
-- signed contribution to hits (+pages asked, -pages added; written as a negation so the column is
-- signed), so hits = accesses - misses, negative when readahead adds more pages than were asked for
-- (cachestat clamps those to 0); hit_pct = 100 * hits / accesses, in whole percent.
SELECT SUM(acc) AS accesses, SUM(miss) AS misses, SUM(hit) AS hits, 100 * SUM(hit) / SUM(acc) AS hit_pct,
       SUM(dirty) AS dirtied
FROM (SELECT i_ino AS inode, last_index - index + 1 AS acc, 0 AS miss, -(index - last_index - 1) AS hit, 0 AS dirty
      FROM filemap.mm_filemap_get_pages
      UNION ALL SELECT i_ino AS inode, 0 AS acc, 1 << order AS miss, -(1 << order) AS hit, 0 AS dirty
      FROM filemap.mm_filemap_add_to_page_cache
      UNION ALL SELECT ino AS inode, 0 AS acc, 0 AS miss, 0 AS hit, 1 AS dirty FROM writeback.writeback_dirty_folio) c
WINDOW(time, {interval_ms});
-- param: interval_ms = 1000 (window length)
