-- Kernel fold: rows handed to a caller's C (ebq_fold) in the kernel instead of a ring.
-- options: fold
SELECT time, pid, fd, count FROM syscalls.sys_enter_write
