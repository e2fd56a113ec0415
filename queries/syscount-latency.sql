-- syscount-latency: system calls by number with total and worst latency (bcc syscount -L).
SELECT e.id AS syscall_nr, COUNT(*) AS count,
       SUM(x.time - e.time) / 1000 AS total_us, MAX(x.time - e.time) / 1000 AS max_us
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id
GROUP BY e.id
ORDER BY total_us DESC
LIMIT {top};
-- param: top = 10 (rows shown)
