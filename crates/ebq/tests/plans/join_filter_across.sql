-- JOIN: a WHERE over both sides (x.ret < e.count) is evaluated in the end program, after the pair closes.
SELECT e.fd, COUNT(*) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid WHERE x.ret < e.count GROUP BY e.fd
