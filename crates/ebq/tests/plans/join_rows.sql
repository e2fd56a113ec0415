-- JOIN: pairing that streams one row per pair, with a filter on each side.
SELECT e.fd, e.count, x.ret, x.time - e.time AS latency FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid WHERE e.fd > 2 AND x.ret < 0
