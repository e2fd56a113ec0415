SELECT fd, cpu, COUNT(*), MAX(count), AVG(count)
FROM tracepoint/syscalls/sys_enter_pread64
GROUP BY fd, cpu
WHERE pid == 1041370
WINDOW(time, 1000, 1000);