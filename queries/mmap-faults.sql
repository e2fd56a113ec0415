-- mmap-faults: pages that faults brought into file-backed mappings, by process and file, per window.
-- filemap:mm_filemap_fault fires when filemap_fault serves a fault (one page, read in when not
-- cached). A fault whose page is not cached drops the mmap lock for the read and runs again,
-- reaching the tracepoint twice for one page: `retry` marks the second (measured: fio mmap
-- randwrite of 4 MiB, 2,048 hits for 1,024 pages), so pages = faults here. Pages mapped from
-- the cache around a fault without one are in mmap-faultaround. File systems whose mappings
-- fault through filemap_fault (ext4, xfs, btrfs, …); tmpfs (shmem_fault) has no tracepoint.
SELECT pid, comm, dev, dev >> 20 AS major, dev & 1048575 AS minor, inode, file_name,
       COUNT(*) AS faults, COUNT(*) AS pages, COUNT(*) * 4096 AS bytes
FROM filemap.mm_filemap_fault
WHERE retry = 0
GROUP BY pid, comm, dev, inode, file_name
ORDER BY faults DESC
LIMIT {top}
WINDOW(time, {interval_ms});
-- param: top = 20 (rows per window)
-- param: interval_ms = 1000 (window length)
