-- File columns at an exit: the returned fd's file (openat).
SELECT file_name, inode FROM syscalls.sys_exit_openat WHERE ret >= 0
