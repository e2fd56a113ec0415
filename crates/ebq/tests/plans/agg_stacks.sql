-- Aggregate: grouped by kernel and user stacks (a stack map).
SELECT kstack, ustack, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY kstack, ustack
