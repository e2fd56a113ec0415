-- Rows: a projection streamed through the per-CPU ring buffers.
SELECT time, pid, comm, fd, count FROM syscalls.sys_enter_read
