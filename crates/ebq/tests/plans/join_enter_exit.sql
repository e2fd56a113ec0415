-- JOIN: enter->exit pairing on the thread (task storage), latency histogram.
SELECT e.fd, COUNT(*), HIST(x.time - e.time) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid GROUP BY e.fd
