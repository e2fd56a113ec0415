-- Filter: syscall_nr('read') is a constant at plan time; the kernel compares the raw event's id with it.
SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE id = syscall_nr('read') AND ret < 0
