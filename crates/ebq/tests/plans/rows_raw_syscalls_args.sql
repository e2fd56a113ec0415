-- Rows: raw_syscalls.sys_enter with argument registers.
SELECT id, args[0], args[2] FROM raw_syscalls.sys_enter WHERE id = 0
