-- Aggregate: expressions over aggregates (user space, after the merge).
SELECT fd, SUM(count) / COUNT(*) AS mean, MAX(count) - MIN(count) AS spread FROM syscalls.sys_enter_read GROUP BY fd
