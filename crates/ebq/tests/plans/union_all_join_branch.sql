-- UNION ALL: a branch that is itself an enter->exit JOIN beside a plain event.
SELECT path, COUNT(*) FROM (SELECT 'syscall' AS path FROM syscalls.sys_enter_read UNION ALL SELECT 'uring' AS path FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req) u GROUP BY path
