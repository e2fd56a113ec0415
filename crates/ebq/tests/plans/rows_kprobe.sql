-- Rows: a kprobe on a kernel function with its arguments.
SELECT time, pid, arg2 FROM kprobe:vfs_read
