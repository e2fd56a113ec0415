-- cache-dirtied: page-cache folios dirtied by process, backing device and inode (cachestat's dirtied), per window.
-- writeback:writeback_dirty_folio fires when a clean folio becomes dirty (a buffered write,
-- a store through a shared mapping); bdi is the backing device's name (major:minor).
SELECT pid, comm, name AS bdi, ino AS inode, COUNT(*) AS folios
FROM writeback.writeback_dirty_folio
GROUP BY pid, comm, name, ino
ORDER BY folios DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
