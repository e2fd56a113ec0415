-- str_at_exit() as a group key: the entry paired with its exit, the name (32 bytes) read at the exit.
SELECT str_at_exit(filename, 32) AS name, COUNT(*) AS n FROM syscalls.sys_enter_openat GROUP BY 1
