-- fs-histograms: I/O size and latency log2 histograms per file system (fs_type, mount_point) and direction, as in the HPC I/O study,
-- on every I/O path of io.ops (system calls and io_uring requests); sizes are the bytes asked for (returned for the
-- vectored calls and requests), failed calls left out; mmap faults (no latency) too.
SELECT fs_type, mount_point, CASE WHEN op = 'write' THEN 1 ELSE 0 END AS is_write,
       COUNT(*) AS ops, HIST(CAST(bytes AS UBIGINT)) AS size_bytes, HIST(latency / 1000) AS latency_us
FROM io.ops
WHERE op IN ('read', 'write') AND ret >= 0 AND path != 'mmap'
GROUP BY fs_type, mount_point, is_write
WINDOW(time, {interval_ms});
-- param: interval_ms = 10000 (window length)
