-- Aggregate: sketches of two arguments in one sketch map (agg numbers them).
SELECT fd, P90(count), P99(pos) FROM syscalls.sys_enter_pread64 GROUP BY fd
