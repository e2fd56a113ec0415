-- Window: hopping count window (400 events, sliding by 100).
SELECT fd, COUNT(*) FROM syscalls.sys_enter_read GROUP BY fd WINDOW(count, 400, 100)
