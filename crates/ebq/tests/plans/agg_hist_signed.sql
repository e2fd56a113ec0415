-- Aggregate: HIST of a signed expression (an exit's return value): negative buckets.
SELECT HIST(ret) FROM syscalls.sys_exit_read
