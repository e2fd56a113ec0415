-- Aggregate: errno_name of a negative return, named per group in user space.
SELECT errno_name(ret), COUNT(*) FROM syscalls.sys_exit_openat WHERE ret < 0 GROUP BY ret
