-- File columns in a windowed aggregate (filetop shape).
SELECT fs_type, file_name, COUNT(*), SUM(count), MAX(file_pos) FROM syscalls.sys_enter_pread64 GROUP BY fs_type, file_name WINDOW(time, 1000)
