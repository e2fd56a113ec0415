-- JOIN: the same pairing with classic tracepoints (--attach classic).
-- options: attach=classic
SELECT COUNT(*), HIST(x.time - e.time) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid
