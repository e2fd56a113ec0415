-- Rows: one ring shared by all CPUs (--rings shared).
-- options: rings=shared
SELECT time, pid, fd FROM syscalls.sys_enter_write
