-- Aggregate: ORDER BY and LIMIT (user space: top-N of the merged groups).
SELECT pid, comm, SUM(count) AS bytes FROM syscalls.sys_enter_write GROUP BY pid, comm ORDER BY bytes DESC LIMIT 5
