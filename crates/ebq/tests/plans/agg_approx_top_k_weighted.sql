-- Aggregate: APPROX_TOP_K weighted by the bytes asked: each event adds `count` to its key; estimates and bound in bytes.
SELECT APPROX_TOP_K(pos, 10, count) AS offset FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'
