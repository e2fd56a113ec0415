-- Filter: IN lists and BETWEEN compiled into the kernel filter.
SELECT fd, COUNT(*) FROM syscalls.sys_enter_write WHERE fd IN (1, 2) OR count BETWEEN 1 AND 100 GROUP BY fd
