-- Filter: a WHERE over columns the kernel has is pushed into the program (before the map).
SELECT comm, COUNT(*) FROM syscalls.sys_enter_read WHERE fd > 2 AND count >= 4096 GROUP BY comm
