-- fsslower: file reads, writes and syncs slower than a threshold, one row each (bcc fsslower), on every
-- I/O path of io.ops with a latency (path 'syscall', 'io_uring' or 'aio'; not an mmap fault); op 'read', 'write' or 'sync'.
SELECT start AS start_ns, comm, pid, path, op, bytes, offset, latency / 1000 AS latency_us, fs_type, file_name
FROM io.ops
WHERE op IN ('read', 'write', 'sync') AND path != 'mmap' AND latency >= {min_us} * 1000;
-- param: min_us = 10000 (report operations slower than this, in µs)
