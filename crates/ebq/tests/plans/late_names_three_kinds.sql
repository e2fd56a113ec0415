-- Late names of all three kinds (fs_type by its type, mount_point by mount id, file_name by dentry) in a window.
-- kernel: typed
SELECT fs_type, mount_point, file_name, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fs_type, mount_point, file_name WINDOW(time, 1000)
