-- a chained JOIN: per open file, the reads between its open and its close
SELECT o.pid, o.ret AS fd, SUM(r.count) AS bytes, COUNT(r.*) AS reads, c.time - o.time AS open_ns
FROM syscalls.sys_exit_openat o
JOIN syscalls.sys_enter_read r ON r.pid = o.pid AND r.fd = o.ret
JOIN syscalls.sys_enter_close c ON c.pid = o.pid AND c.fd = o.ret
WHERE o.ret >= 0
