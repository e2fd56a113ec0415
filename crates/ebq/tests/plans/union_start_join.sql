-- UNION ALL of start events joined with one end event (biolatency -Q shape).
SELECT MAX(x.time - s.time) FROM (SELECT tid, time FROM syscalls.sys_enter_read UNION ALL SELECT tid, time FROM syscalls.sys_enter_pread64 WHERE fd > 2) s JOIN syscalls.sys_exit_read x ON s.tid = x.tid
