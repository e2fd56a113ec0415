-- JOIN: enter->exit pairing in a HASH aged by --max-pair-age (--pairs hash).
-- options: pairs=hash
SELECT e.fd, MAX(x.time - e.time) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid GROUP BY e.fd
