-- syscount: system calls by number, most frequent first (bcc syscount).
-- Names: `ausyscall NUMBER` or /usr/include/x86_64-linux-gnu/asm/unistd_64.h.
SELECT id AS syscall_nr, COUNT(*) AS count
FROM raw_syscalls.sys_enter
GROUP BY id
ORDER BY count DESC
LIMIT {top};
-- param: top = 10 (rows shown)
