-- View: io.ops aggregated per file system with histograms (fs-histograms).
SELECT fs_type, mount_point, COUNT(*) AS ops, HIST(latency / 1000) AS latency_us FROM io.ops WHERE op IN ('read', 'write') AND ret >= 0 AND path != 'mmap' GROUP BY fs_type, mount_point
