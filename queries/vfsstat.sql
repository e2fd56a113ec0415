-- vfsstat: reads, writes, fsyncs, opens and creates per second (bcc vfsstat's columns), through system
-- calls and io_uring requests alike: each counted where it starts (a call's entry, a request's
-- submission), one program per path.
SELECT path, op, COUNT(*) AS calls
FROM (
  SELECT 'syscall' AS path,
         CASE WHEN id IN (syscall_nr('read'), syscall_nr('readv'), syscall_nr('pread64'), syscall_nr('preadv'), syscall_nr('preadv2')) THEN 'read'
              WHEN id IN (syscall_nr('write'), syscall_nr('writev'), syscall_nr('pwrite64'), syscall_nr('pwritev'), syscall_nr('pwritev2')) THEN 'write'
              WHEN id IN (syscall_nr('fsync'), syscall_nr('fdatasync')) THEN 'fsync'
              WHEN id = syscall_nr('creat') THEN 'create'
              ELSE 'open' END AS op
  FROM raw_syscalls.sys_enter
  WHERE id IN (syscall_nr('read'), syscall_nr('readv'), syscall_nr('pread64'), syscall_nr('preadv'), syscall_nr('preadv2'),
               syscall_nr('write'), syscall_nr('writev'), syscall_nr('pwrite64'), syscall_nr('pwritev'), syscall_nr('pwritev2'),
               syscall_nr('fsync'), syscall_nr('fdatasync'),
               syscall_nr('open'), syscall_nr('openat'), syscall_nr('openat2'), syscall_nr('creat'))
  UNION ALL
  SELECT 'io_uring' AS path,
         CASE WHEN opcode IN (io_uring_op('READV'), io_uring_op('READ_FIXED'), io_uring_op('READ')) THEN 'read'
              WHEN opcode IN (io_uring_op('WRITEV'), io_uring_op('WRITE_FIXED'), io_uring_op('WRITE')) THEN 'write'
              WHEN opcode = io_uring_op('FSYNC') THEN 'fsync'
              ELSE 'open' END AS op
  FROM io_uring.io_uring_submit_req
  WHERE opcode IN (io_uring_op('READV'), io_uring_op('WRITEV'), io_uring_op('FSYNC'), io_uring_op('READ_FIXED'),
                   io_uring_op('WRITE_FIXED'), io_uring_op('OPENAT'), io_uring_op('READ'), io_uring_op('WRITE'),
                   io_uring_op('OPENAT2'))
) u
GROUP BY path, op
WINDOW(time, {interval_ms});
-- param: interval_ms = 1000 (window length)
