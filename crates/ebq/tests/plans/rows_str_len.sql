-- Rows: str(ptr, len) of a `const char *` argument (already a string) reads at most len bytes.
SELECT comm, str(buf, 32) FROM syscalls.sys_enter_write
