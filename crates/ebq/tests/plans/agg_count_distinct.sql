-- Aggregate: COUNT(DISTINCT x): exact, as a hidden key in the kernel.
SELECT comm, COUNT(DISTINCT fd) FROM syscalls.sys_enter_read GROUP BY comm
