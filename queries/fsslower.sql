-- fsslower: file reads, writes and fsyncs slower than a threshold, one row each (bcc fsslower).
SELECT e.time AS start_ns, e.comm, e.pid, e.id AS syscall_nr, args[2] AS bytes,
       CASE WHEN e.id IN (syscall_nr('pread64'), syscall_nr('pwrite64')) THEN args[3] ELSE e.file_pos END AS offset,
       (x.time - e.time) / 1000 AS latency_us, e.fs_type, e.file_name
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id
WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'), syscall_nr('fsync'), syscall_nr('fdatasync'))
  AND x.time - e.time >= {min_us} * 1000;
-- param: min_us = 10000 (report operations slower than this, in µs)
