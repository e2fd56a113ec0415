-- Late names off (--pin: external readers see the kernel key): the name is read per event into the key.
-- kernel: typed
-- options: late_names=off
SELECT file_name, COUNT(*), SUM(count) FROM syscalls.sys_enter_write GROUP BY file_name
