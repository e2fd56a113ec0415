-- Late names: on a 6.2+ kernel GROUP BY file_name keys by the dentry; a new group writes its name into ebq_names.
-- kernel: typed
SELECT file_name, COUNT(*), SUM(count) FROM syscalls.sys_enter_write GROUP BY file_name
