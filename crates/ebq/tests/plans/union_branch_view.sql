-- UNION ALL: a branch reading the io.ops view (its aio sources kept, the rest left out by its WHERE) beside a plain event.
SELECT path, COUNT(*), SUM(n) FROM (SELECT path, bytes AS n FROM io.ops WHERE path = 'aio' UNION ALL SELECT 'read' AS path, ret AS n FROM syscalls.sys_exit_read) u GROUP BY path
