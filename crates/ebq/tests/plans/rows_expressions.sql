-- Rows: computed columns and a CASE, evaluated in the kernel.
SELECT pid, count / 1024 AS kb, CASE WHEN count > 4096 THEN 'big' ELSE 'small' END AS size FROM syscalls.sys_enter_write
