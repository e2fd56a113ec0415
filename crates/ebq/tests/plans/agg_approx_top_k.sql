-- Aggregate: APPROX_TOP_K: a Count-Min sketch and candidate slots in the one value; k rows out.
SELECT APPROX_TOP_K(pos, 10) AS offset FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'
