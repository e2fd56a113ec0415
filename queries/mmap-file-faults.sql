-- mmap-file-faults: user page faults by process and the file mapped at the faulting address, on any file system (tmpfs too), per window.
-- exceptions:page_fault_user fires once per fault a thread takes in user mode; the program finds
-- the VMA at the faulting address (bpf_find_vma) and names its file. Faults on anonymous memory
-- (inode 0) are left out. Pages mapped by fault-around take no fault of their own
-- (mmap-faultaround counts them on file systems with filemap tracepoints).
-- Cost: the fault tracepoint runs with interrupts off, where bpf_find_vma hands the mmap lock's
-- release to an irq_work (a self-interrupt): ~6.3 us in BPF per fault on this VM, against
-- ~0.15 us for a plain count; use it to find which files a workload faults on, not always-on.
SELECT pid, comm, fs_type, mount_point, file_name, inode, COUNT(*) AS faults
FROM exceptions.page_fault_user
WHERE inode <> 0
GROUP BY pid, comm, fs_type, mount_point, file_name, inode
ORDER BY faults DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
