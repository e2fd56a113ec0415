-- filetop: reads and writes by process and file, busiest first, per window (bcc filetop), on every
-- I/O path of io.ops: system calls (read, pread64, readv, preadv, preadv2 and the writes) and io_uring
-- requests. Bytes are the sizes asked for, as filetop's R_Kb/W_Kb (the returned ones for the
-- vectored calls and requests, whose size is not in their arguments).
SELECT pid, comm, file_name, fs_type,
       SUM(CASE WHEN op = 1 THEN 1 ELSE 0 END) AS reads,
       SUM(CASE WHEN op = 2 THEN 1 ELSE 0 END) AS writes,
       SUM(CASE WHEN op = 1 AND bytes > 0 THEN bytes ELSE 0 END) / 1024 AS read_kb,
       SUM(CASE WHEN op = 2 AND bytes > 0 THEN bytes ELSE 0 END) / 1024 AS write_kb
FROM io.ops
WHERE op IN (1, 2)
GROUP BY pid, comm, file_name, fs_type
ORDER BY SUM(CASE WHEN bytes > 0 THEN bytes ELSE 0 END) DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
