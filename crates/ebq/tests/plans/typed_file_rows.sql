-- File columns as typed loads (bpf_rdonly_cast, 6.2+): one probe read for the fd slot, none per hop.
-- kernel: typed
SELECT inode, fs_type, file_name, count FROM syscalls.sys_enter_write
