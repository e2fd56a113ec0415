-- filetop: reads and writes by process and file, busiest first, per window (bcc filetop).
-- Bytes are the sizes asked for (read/write/pread64/pwrite64), as filetop's R_Kb/W_Kb.
SELECT pid, comm, file_name, fs_type,
       SUM(CASE WHEN id IN (syscall_nr('read'), syscall_nr('pread64')) THEN 1 ELSE 0 END) AS reads,
       SUM(CASE WHEN id IN (syscall_nr('write'), syscall_nr('pwrite64')) THEN 1 ELSE 0 END) AS writes,
       SUM(CASE WHEN id IN (syscall_nr('read'), syscall_nr('pread64')) THEN args[2] ELSE 0 END) / 1024 AS read_kb,
       SUM(CASE WHEN id IN (syscall_nr('write'), syscall_nr('pwrite64')) THEN args[2] ELSE 0 END) / 1024 AS write_kb
FROM raw_syscalls.sys_enter
WHERE id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'))
GROUP BY pid, comm, file_name, fs_type
ORDER BY SUM(args[2]) DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
