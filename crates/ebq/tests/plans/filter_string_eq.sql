-- Filter: comparing comm with a string constant in the kernel, bytewise.
SELECT pid, COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'dd' GROUP BY pid
