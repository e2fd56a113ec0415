-- Rows: SELECT * of a tracepoint: every argument of its format (system columns are named explicitly).
SELECT * FROM syscalls.sys_enter_pread64
