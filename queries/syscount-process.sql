-- syscount-process: system calls by process, most frequent first (bcc syscount -P).
SELECT pid, comm, COUNT(*) AS count
FROM raw_syscalls.sys_enter
GROUP BY pid, comm
ORDER BY count DESC
LIMIT {top};
-- param: top = 10 (rows shown)
