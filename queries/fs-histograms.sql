-- fs-histograms: I/O size and latency log2 histograms per file system (fs_type, mount_point) and direction, as in the HPC I/O study.
SELECT e.fs_type, e.mount_point,
       CASE WHEN e.id IN (syscall_nr('write'), syscall_nr('pwrite64')) THEN 1 ELSE 0 END AS is_write,
       COUNT(*) AS ops, HIST(args[2]) AS size_bytes, HIST((x.time - e.time) / 1000) AS latency_us
FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id
WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('write'), syscall_nr('pwrite64'))
GROUP BY e.fs_type, e.mount_point, is_write
WINDOW(time, {interval_ms});
-- param: interval_ms = 10000 (window length)
