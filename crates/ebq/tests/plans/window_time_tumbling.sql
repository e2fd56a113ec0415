-- Window: tumbling time window (the epoch counter selects the map half).
SELECT comm, COUNT(*) FROM syscalls.sys_enter_read GROUP BY comm WINDOW(time, 1000)
