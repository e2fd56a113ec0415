-- JOIN of two streams (FROM a, b … WINDOW): each stream a row program, user space joins them per time window.
SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b WHERE a.tid = b.tid WINDOW(time, 100)
