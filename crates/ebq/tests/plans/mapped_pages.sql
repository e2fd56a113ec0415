-- Mapped pages: fault-around's pages counted from the process's file pages (mmap-faultaround), 6.2+.
-- kernel: typed
SELECT pid, comm, inode, file_name, COUNT(*) AS passes, SUM(pages_mapped) AS pages FROM filemap.mm_filemap_map_pages GROUP BY pid, comm, inode, file_name
