-- File columns on the start side of a JOIN, grouped (late names) with a latency sum.
SELECT e.file_name, e.inode, COUNT(*), SUM(x.ret) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid WHERE e.mount_point = '/' GROUP BY e.file_name, e.inode
