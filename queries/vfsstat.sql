-- vfsstat: read, write, fsync and open system calls per second (bcc vfsstat, counted at the system call layer).
SELECT syscall_name(id) AS syscall, COUNT(*) AS calls
FROM raw_syscalls.sys_enter
WHERE id IN (syscall_nr('read'), syscall_nr('readv'), syscall_nr('pread64'), syscall_nr('preadv'),
             syscall_nr('write'), syscall_nr('writev'), syscall_nr('pwrite64'), syscall_nr('pwritev'),
             syscall_nr('fsync'), syscall_nr('fdatasync'),
             syscall_nr('open'), syscall_nr('openat'), syscall_nr('openat2'), syscall_nr('creat'))
GROUP BY id
WINDOW(time, {interval_ms});
-- param: interval_ms = 1000 (window length)
