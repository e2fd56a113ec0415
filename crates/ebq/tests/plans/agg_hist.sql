-- Aggregate: HIST (log2 buckets inline in the value), grouped.
SELECT comm, HIST(count) FROM syscalls.sys_enter_read GROUP BY comm
