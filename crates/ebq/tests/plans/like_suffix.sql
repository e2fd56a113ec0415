-- Rows: LIKE '%abc' on a user-memory string (filename): a loop to its NUL, in a function of the prelude.
SELECT filename, flags FROM syscalls.sys_enter_openat WHERE filename LIKE '%.conf' AND comm NOT LIKE '%sh'
