-- JOIN: the same pairing on raw tracepoints (--attach raw).
-- options: attach=raw
SELECT COUNT(*), HIST(x.time - e.time) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid
