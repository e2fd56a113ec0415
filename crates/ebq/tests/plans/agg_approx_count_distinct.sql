-- Aggregate: APPROX_COUNT_DISTINCT: a HyperLogLog sketch in the value.
SELECT comm, APPROX_COUNT_DISTINCT(fd) FROM syscalls.sys_enter_read GROUP BY comm
