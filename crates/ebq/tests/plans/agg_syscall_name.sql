-- Aggregate: a function of a key named in user space (syscall_name), counted at raw sys_exit.
SELECT syscall_name(id) AS syscall, COUNT(*) AS count FROM raw_syscalls.sys_exit GROUP BY id ORDER BY count DESC LIMIT 10
