-- File columns: the fd's struct file walked in the kernel (inode, dev, fs_type, mount point, name, position).
SELECT inode, dev, fs_type, mount_point, file_name, file_pos, count FROM syscalls.sys_enter_write WHERE file_pos > 10 AND mount_point LIKE '/t%'
