-- syscount-process: completed system calls by process, most frequent first (bcc syscount -P, counted at sys_exit).
SELECT pid, comm, COUNT(*) AS count
FROM raw_syscalls.sys_exit
GROUP BY pid, comm
ORDER BY count DESC
LIMIT {top};
-- param: top = 10 (rows shown)
