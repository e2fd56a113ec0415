-- Window: no GROUP BY but a window: the window number is the only key.
SELECT COUNT(*), SUM(count) FROM syscalls.sys_enter_write WINDOW(time, 1000)
