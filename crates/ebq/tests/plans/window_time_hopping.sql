-- Window: hopping time window (size 3000, slide 1000): user space assembles panes.
SELECT comm, COUNT(*), SUM(count) FROM syscalls.sys_enter_read GROUP BY comm WINDOW(time, 3000, 1000)
