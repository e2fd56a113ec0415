-- Aggregate: quantiles (P50, P99, QUANTILE): a sketch map beside the group map.
SELECT comm, P50(count), P99(count), QUANTILE(count, 0.9) FROM syscalls.sys_enter_read GROUP BY comm
