-- Aggregate: grouped by a string (comm) and numbers; keys laid out largest first.
SELECT comm, pid, cpu, COUNT(*) FROM syscalls.sys_enter_write GROUP BY comm, pid, cpu
