-- The file of a user page fault: the VMA at the address (bpf_find_vma), mmap-file-faults, 6.2+.
-- kernel: typed
SELECT pid, comm, file_name, inode, COUNT(*) AS faults FROM exceptions.page_fault_user WHERE inode <> 0 GROUP BY pid, comm, file_name, inode
