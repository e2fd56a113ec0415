-- syscount: completed system calls by name, most frequent first (bcc syscount, counted at sys_exit).
SELECT syscall_name(id) AS syscall, COUNT(*) AS count
FROM raw_syscalls.sys_exit
GROUP BY id
ORDER BY count DESC
LIMIT {top};
-- param: top = 10 (rows shown)
