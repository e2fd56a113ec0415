-- Window: APPROX_TOP_K per time window: a sketch per window's group, merged like any value.
SELECT APPROX_TOP_K(count, 5) FROM syscalls.sys_enter_read WINDOW(time, 1000) ORDER BY estimate DESC
