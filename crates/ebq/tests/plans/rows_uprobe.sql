-- Rows: a uprobe on a library function.
SELECT time, pid, arg0 FROM uprobe:libc:pread64
