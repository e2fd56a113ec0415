-- Aggregate: HAVING filters groups in user space.
SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_read GROUP BY comm HAVING COUNT(*) > 10
