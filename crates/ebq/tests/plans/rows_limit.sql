-- Rows: LIMIT stops the stream after N rows (user space).
SELECT time, pid, ret FROM syscalls.sys_exit_read LIMIT 10
