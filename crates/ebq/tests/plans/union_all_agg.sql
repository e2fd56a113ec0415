-- UNION ALL: one program per branch, one shared group map (vfsstat-like).
SELECT op, COUNT(*) FROM (SELECT 'read' AS op FROM syscalls.sys_enter_read UNION ALL SELECT 'write' AS op FROM syscalls.sys_enter_write) u GROUP BY op
