-- str_at_exit(): a row query over a system call's entry that reads the file name at the call's
-- exit, bound as the entry paired with sys_exit_openat on tid: the name's pointer is carried and
-- read at the exit (in WHERE too); every other column is the entry's (a plain `filename` is read there).
SELECT time, comm, filename, str_at_exit(filename) AS name FROM syscalls.sys_enter_openat WHERE comm = 'ls' AND str_at_exit(filename) NOT LIKE '/proc/%'
