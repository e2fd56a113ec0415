-- Filter: WHERE goes to the kernel, HAVING stays with the groups in user space.
SELECT fd, SUM(count) AS bytes FROM syscalls.sys_enter_write WHERE pid > 1 GROUP BY fd HAVING SUM(count) > 1000000
