-- JOIN: raw sys_enter to sys_exit on (tid, id), by system call (syscount -L).
SELECT syscall_name(e.id) AS syscall, COUNT(*) AS count, SUM(x.time - e.time) / 1000 AS total_us FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id GROUP BY e.id ORDER BY total_us DESC LIMIT 10
