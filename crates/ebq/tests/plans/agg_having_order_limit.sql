-- Aggregate: HAVING, ORDER BY and LIMIT together.
SELECT comm, COUNT(*) AS n, MAX(count) AS biggest FROM syscalls.sys_enter_read GROUP BY comm HAVING MAX(count) > 4096 ORDER BY n DESC LIMIT 3
