-- View: io.ops, rows of reads and writes slower than 10 ms (fsslower).
SELECT start, comm, pid, path, op, bytes, latency / 1000 AS latency_us, file_name FROM io.ops WHERE op IN ('read', 'write') AND path != 'mmap' AND latency >= 10000000
