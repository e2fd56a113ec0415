-- Rows: a user-memory string (filename) with LIKE filters, off the BPF stack.
SELECT filename, flags FROM syscalls.sys_enter_openat WHERE filename LIKE '/etc/%' AND comm <> 'x'
