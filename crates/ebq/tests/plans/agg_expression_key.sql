-- Aggregate: keys and arguments that are expressions (computed in the kernel).
SELECT fd % 4, SUM(count / 1024 + 1) FROM syscalls.sys_enter_write GROUP BY fd % 4
