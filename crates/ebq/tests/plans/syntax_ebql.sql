-- Syntax: eBQL's clause order and event naming plan like SQL's (the ebql example).
SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 7 WINDOW(time, 1000, 1000)
