-- JOIN of two streams, aggregated per time window: the grouping and counting run in user space after the join.
SELECT a.comm, COUNT(*), SUM(b.ret) FROM syscalls.sys_enter_read a, syscalls.sys_exit_read b WHERE a.tid = b.tid AND a.fd > 2 GROUP BY a.comm WINDOW(time, 1000)
