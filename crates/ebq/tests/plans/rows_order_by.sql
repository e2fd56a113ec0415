-- Rows: ORDER BY sorts the rows at the end (user space).
SELECT pid, count FROM syscalls.sys_enter_write ORDER BY count DESC LIMIT 20
