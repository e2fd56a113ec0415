-- Kernel fold of an enter->exit JOIN's rows.
-- options: fold
SELECT e.time AS time, x.pid AS pid, x.ret AS ret, x.time - e.time AS latency FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid
