-- Aggregate: LHIST (linear buckets with under/overflow) beside a HIST.
SELECT fd, LHIST(count, 0, 4096, 512), HIST(count) FROM syscalls.sys_enter_write GROUP BY fd
