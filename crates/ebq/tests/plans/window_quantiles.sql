-- Window: quantile sketches per time window.
SELECT P99(count) FROM syscalls.sys_enter_read WINDOW(time, 500)
