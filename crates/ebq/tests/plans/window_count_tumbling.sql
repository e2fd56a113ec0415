-- Window: tumbling count window (every 100 matching events).
SELECT fd, COUNT(*), MAX(count) FROM syscalls.sys_enter_read GROUP BY fd WINDOW(count, 100)
