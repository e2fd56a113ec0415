-- UNION ALL: rows from two events into one ring, each branch computing the columns.
SELECT time, pid, n FROM (SELECT time, pid, count AS n FROM syscalls.sys_enter_read UNION ALL SELECT time, pid, count AS n FROM syscalls.sys_enter_write WHERE fd = 1) u
