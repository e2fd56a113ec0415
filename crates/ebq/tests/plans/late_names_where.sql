-- Late names do not apply when WHERE reads the name anyway: the string is the key.
-- kernel: typed
SELECT file_name, COUNT(*) FROM syscalls.sys_enter_write WHERE file_name LIKE 'log%' GROUP BY file_name
