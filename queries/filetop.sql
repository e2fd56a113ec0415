-- filetop: reads and writes by process and file, busiest first, per window (bcc filetop), through
-- system calls and io_uring requests. Bytes are the sizes asked for, as filetop's R_Kb/W_Kb.
-- The cheapest program per path: a system call is counted at its entry alone (read, pread64, write,
-- pwrite64: the size is an argument, no exit needed); an io_uring request at its completion, paired
-- with its submission (the request's file is assigned when it is issued, after submission).
SELECT who AS pid, name AS comm, file AS file_name, fs AS fs_type,
       SUM(CASE WHEN is_write = 0 THEN 1 ELSE 0 END) AS reads,
       SUM(is_write) AS writes,
       SUM(CASE WHEN is_write = 0 THEN bytes ELSE 0 END) / 1024 AS read_kb,
       SUM(CASE WHEN is_write = 1 THEN bytes ELSE 0 END) / 1024 AS write_kb
FROM (
  SELECT pid AS who, comm AS name, file_name AS file, fs_type AS fs,
         CASE WHEN id IN (syscall_nr('write'), syscall_nr('pwrite64')) THEN 1 ELSE 0 END AS is_write,
         args[2] AS bytes
  FROM raw_syscalls.sys_enter
  WHERE id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'))
  UNION ALL
  SELECT s.pid AS who, s.comm AS name, c.file_name AS file, c.fs_type AS fs,
         CASE WHEN s.opcode IN (io_uring_op('WRITEV'), io_uring_op('WRITE_FIXED'), io_uring_op('WRITE')) THEN 1 ELSE 0 END AS is_write,
         CASE WHEN s.opcode IN (io_uring_op('READV'), io_uring_op('WRITEV')) THEN c.res ELSE s.req_len END AS bytes
  FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req
  WHERE s.opcode IN (io_uring_op('READV'), io_uring_op('WRITEV'), io_uring_op('READ_FIXED'), io_uring_op('WRITE_FIXED'),
                     io_uring_op('READ'), io_uring_op('WRITE')) AND c.res >= 0
) u
GROUP BY who, name, file, fs
ORDER BY SUM(bytes) DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
