-- Window: HIST per window with ORDER BY and LIMIT per window.
SELECT comm, HIST(count), COUNT(*) AS n FROM syscalls.sys_enter_write GROUP BY comm ORDER BY n DESC LIMIT 3 WINDOW(time, 1000)
