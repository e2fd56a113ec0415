-- Kernel fold of a UNION ALL's rows (the report's shape): one fold for every branch.
-- options: fold
SELECT time, pid, n FROM (SELECT time, pid, count AS n FROM syscalls.sys_enter_read UNION ALL SELECT time, pid, count AS n FROM syscalls.sys_enter_write) u
