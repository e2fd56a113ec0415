SELECT path, op, pid, tid, comm, cgroup, fs_type, mount_point, file_name, inode, dev, offset, bytes, ret, start, end, latency,
  call, buf, mount_id, dentry_id
FROM (
  SELECT 'syscall' AS path,
    CASE WHEN e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('readv'), syscall_nr('preadv'), syscall_nr('preadv2')) THEN 'read'
         WHEN e.id IN (syscall_nr('write'), syscall_nr('pwrite64'), syscall_nr('writev'), syscall_nr('pwritev'), syscall_nr('pwritev2')) THEN 'write'
         WHEN e.id IN (syscall_nr('fsync'), syscall_nr('fdatasync'), syscall_nr('syncfs'), syscall_nr('sync_file_range')) THEN 'sync'
         WHEN e.id = syscall_nr('close') THEN 'close'
         WHEN e.id = syscall_nr('lseek') THEN 'seek'
         ELSE 'meta' END AS op,
    x.pid AS pid, x.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.fs_type AS fs_type, e.mount_point AS mount_point, e.file_name AS file_name,
    e.inode AS inode, e.dev AS dev,
    CASE WHEN e.id IN (syscall_nr('pread64'), syscall_nr('pwrite64'), syscall_nr('preadv'), syscall_nr('pwritev'), syscall_nr('preadv2'), syscall_nr('pwritev2')) THEN args[3]
         WHEN e.id = syscall_nr('fallocate') THEN args[2]
         WHEN e.id = syscall_nr('sync_file_range') THEN args[1]
         ELSE e.file_pos END AS offset,
    CASE WHEN e.id IN (syscall_nr('read'), syscall_nr('write'), syscall_nr('pread64'), syscall_nr('pwrite64')) THEN args[2]
         WHEN e.id IN (syscall_nr('readv'), syscall_nr('writev'), syscall_nr('preadv'), syscall_nr('pwritev'), syscall_nr('preadv2'), syscall_nr('pwritev2')) THEN x.ret
         ELSE 0 END AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    e.id AS call,
    CASE WHEN e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('readv'), syscall_nr('preadv'), syscall_nr('preadv2'),
      syscall_nr('write'), syscall_nr('pwrite64'), syscall_nr('writev'), syscall_nr('pwritev'), syscall_nr('pwritev2')) THEN args[1]
         ELSE 0 END AS buf,
    e.mount_id AS mount_id, e.dentry_id AS dentry_id
  FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id
  WHERE e.id IN (syscall_nr('read'), syscall_nr('pread64'), syscall_nr('readv'), syscall_nr('preadv'), syscall_nr('preadv2'),
    syscall_nr('write'), syscall_nr('pwrite64'), syscall_nr('writev'), syscall_nr('pwritev'), syscall_nr('pwritev2'),
    syscall_nr('fsync'), syscall_nr('fdatasync'),
    syscall_nr('close'), syscall_nr('lseek'),
    syscall_nr('syncfs'), syscall_nr('sync_file_range'), syscall_nr('ftruncate'), syscall_nr('fallocate'))
  UNION ALL
  SELECT 'io_uring' AS path,
    CASE WHEN s.opcode IN (io_uring_op('READV'), io_uring_op('READ_FIXED'), io_uring_op('READ')) THEN 'read'
         WHEN s.opcode IN (io_uring_op('WRITEV'), io_uring_op('WRITE_FIXED'), io_uring_op('WRITE')) THEN 'write'
         WHEN s.opcode IN (io_uring_op('FSYNC'), io_uring_op('SYNC_FILE_RANGE')) THEN 'sync'
         WHEN s.opcode IN (io_uring_op('OPENAT'), io_uring_op('OPENAT2')) THEN 'open'
         WHEN s.opcode = io_uring_op('CLOSE') THEN 'close'
         ELSE 'meta' END AS op,
    s.pid AS pid, s.tid AS tid, s.comm AS comm, s.cgroup AS cgroup,
    c.fs_type AS fs_type, c.mount_point AS mount_point, c.file_name AS file_name,
    c.inode AS inode, c.dev AS dev,
    s.req_offset AS offset,
    CASE WHEN s.opcode IN (io_uring_op('READ_FIXED'), io_uring_op('WRITE_FIXED'), io_uring_op('READ'), io_uring_op('WRITE'))
           THEN s.req_len
         WHEN s.opcode IN (io_uring_op('READV'), io_uring_op('WRITEV')) THEN c.res
         ELSE 0 END AS bytes,
    c.res AS ret, s.time AS start, c.time AS end, c.time - s.time AS latency,
    CAST(s.opcode AS BIGINT) AS call, 0 AS buf, c.mount_id AS mount_id, c.dentry_id AS dentry_id
  FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req
  WHERE s.opcode IN (io_uring_op('READV'), io_uring_op('WRITEV'), io_uring_op('FSYNC'), io_uring_op('READ_FIXED'),
    io_uring_op('WRITE_FIXED'), io_uring_op('SYNC_FILE_RANGE'), io_uring_op('FALLOCATE'), io_uring_op('OPENAT'),
    io_uring_op('CLOSE'), io_uring_op('READ'), io_uring_op('WRITE'), io_uring_op('OPENAT2'), io_uring_op('FTRUNCATE'))
  UNION ALL
  SELECT 'aio' AS path,
    CASE WHEN b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'WRITE') != 0 THEN 'write' ELSE 'read' END AS op,
    b.pid AS pid, b.tid AS tid, b.comm AS comm, b.cgroup AS cgroup,
    b.fs_type AS fs_type, b.mount_point AS mount_point, b.file_name AS file_name,
    b.inode AS inode, b.dev AS dev,
    b.iocb.ki_pos AS offset, b.iter.count AS bytes,
    c.ret AS ret, b.time AS start, c.time AS end, c.time - b.time AS latency,
    CASE WHEN b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'WRITE') != 0 THEN 1 ELSE 0 END AS call,
    0 AS buf, c.mount_id AS mount_id, c.dentry_id AS dentry_id
  FROM iomap.iomap_dio_rw_begin b JOIN iomap.iomap_dio_complete c ON b.iocb = c.iocb
  WHERE b.iocb.ki_flags & print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO_RW') != 0
  UNION ALL
  SELECT 'aio' AS path,
    CASE WHEN s.opcode IN (0, 7) THEN 'read' WHEN s.opcode IN (1, 8) THEN 'write' ELSE 'sync' END AS op,
    s.pid AS pid, s.tid AS tid, s.comm AS comm, s.cgroup AS cgroup,
    s.fs_type AS fs_type, s.mount_point AS mount_point, s.file_name AS file_name,
    s.inode AS inode, s.dev AS dev,
    s.offset AS offset,
    CASE WHEN s.opcode IN (0, 1) THEN s.nbytes WHEN s.opcode IN (7, 8) THEN c.res ELSE 0 END AS bytes,
    c.res AS ret, s.time AS start, c.time AS end, c.time - s.time AS latency,
    CAST(s.opcode AS BIGINT) AS call, 0 AS buf, s.mount_id AS mount_id, s.dentry_id AS dentry_id
  FROM aio.submit s JOIN aio.complete c ON s.pid = c.pid AND s.iocb = c.iocb
  WHERE s.opcode IN (2, 3) OR (s.opcode IN (0, 1, 7, 8) AND s.file_flags & 16384 = 0)
  UNION ALL
  SELECT 'mmap' AS path, 'read' AS op,
    f.pid AS pid, f.tid AS tid, f.comm AS comm, f.cgroup AS cgroup,
    f.fs_type AS fs_type, f.mount_point AS mount_point, f.file_name AS file_name,
    f.inode AS inode, f.dev AS dev,
    f.index * 4096 AS offset, 4096 AS bytes, 4096 AS ret, f.time AS start, f.time AS end, 0 AS latency,
    0 AS call, 0 AS buf, f.mount_id AS mount_id, f.dentry_id AS dentry_id
  FROM filemap.mm_filemap_fault f
  WHERE f.retry = 0
  UNION ALL
  SELECT 'mmap' AS path, 'read' AS op,
    m.pid AS pid, m.tid AS tid, m.comm AS comm, m.cgroup AS cgroup,
    m.fs_type AS fs_type, m.mount_point AS mount_point, m.file_name AS file_name,
    m.inode AS inode, m.dev AS dev,
    m.index * 4096 AS offset, m.pages_mapped * 4096 AS bytes, m.pages_mapped * 4096 AS ret,
    m.time AS start, m.time AS end, 0 AS latency, 0 AS call, 0 AS buf, m.mount_id AS mount_id, m.dentry_id AS dentry_id
  FROM filemap.mm_filemap_map_pages m
  WHERE m.pages_mapped > 0
  UNION ALL
  SELECT 'mmap' AS path, 'read' AS op,
    r.pid AS pid, r.tid AS tid, r.comm AS comm, r.cgroup AS cgroup,
    r.fs_type AS fs_type, r.mount_point AS mount_point, r.file_name AS file_name,
    r.inode AS inode, r.dev AS dev,
    r.fault_index * 4096 AS offset, r.pages_mapped * 4096 AS bytes, r.pages_mapped * 4096 AS ret,
    r.time AS start, r.time AS end, 0 AS latency, 0 AS call, 0 AS buf, r.mount_id AS mount_id, r.dentry_id AS dentry_id
  FROM kmem.rss_stat r
  WHERE r.pages_mapped > 0
  UNION ALL
  SELECT 'syscall' AS path, 'read' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.in_fs_type AS fs_type, e.in_mount_point AS mount_point, e.in_file_name AS file_name,
    e.in_inode AS inode, e.in_dev AS dev,
    CASE WHEN e.off_in = 0 THEN CAST(e.in_file_pos AS BIGINT)
         ELSE user_i64(e.off_in) - CASE WHEN x.ret > 0 THEN x.ret ELSE 0 END END AS offset, e.len AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('copy_file_range') AS call, 0 AS buf, e.in_mount_id AS mount_id, e.in_dentry_id AS dentry_id
  FROM syscalls.sys_enter_copy_file_range e JOIN syscalls.sys_exit_copy_file_range x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'write' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.out_fs_type AS fs_type, e.out_mount_point AS mount_point, e.out_file_name AS file_name,
    e.out_inode AS inode, e.out_dev AS dev,
    CASE WHEN e.off_out = 0 THEN CAST(e.out_file_pos AS BIGINT)
         ELSE user_i64(e.off_out) - CASE WHEN x.ret > 0 THEN x.ret ELSE 0 END END AS offset, e.len AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('copy_file_range') AS call, 0 AS buf, e.out_mount_id AS mount_id, e.out_dentry_id AS dentry_id
  FROM syscalls.sys_enter_copy_file_range e JOIN syscalls.sys_exit_copy_file_range x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'read' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.in_fs_type AS fs_type, e.in_mount_point AS mount_point, e.in_file_name AS file_name,
    e.in_inode AS inode, e.in_dev AS dev,
    CASE WHEN e.offset = 0 THEN CAST(e.in_file_pos AS BIGINT)
         ELSE user_i64(e.offset) - CASE WHEN x.ret > 0 THEN x.ret ELSE 0 END END AS offset, e.count AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('sendfile') AS call, 0 AS buf, e.in_mount_id AS mount_id, e.in_dentry_id AS dentry_id
  FROM syscalls.sys_enter_sendfile64 e JOIN syscalls.sys_exit_sendfile64 x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'write' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.out_fs_type AS fs_type, e.out_mount_point AS mount_point, e.out_file_name AS file_name,
    e.out_inode AS inode, e.out_dev AS dev,
    CAST(e.out_file_pos AS BIGINT) AS offset, e.count AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('sendfile') AS call, 0 AS buf, e.out_mount_id AS mount_id, e.out_dentry_id AS dentry_id
  FROM syscalls.sys_enter_sendfile64 e JOIN syscalls.sys_exit_sendfile64 x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'read' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.in_fs_type AS fs_type, e.in_mount_point AS mount_point, e.in_file_name AS file_name,
    e.in_inode AS inode, e.in_dev AS dev,
    CASE WHEN e.off_in = 0 THEN CAST(e.in_file_pos AS BIGINT)
         ELSE user_i64(e.off_in) - CASE WHEN x.ret > 0 THEN x.ret ELSE 0 END END AS offset, e.len AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('splice') AS call, 0 AS buf, e.in_mount_id AS mount_id, e.in_dentry_id AS dentry_id
  FROM syscalls.sys_enter_splice e JOIN syscalls.sys_exit_splice x ON e.tid = x.tid
  WHERE e.in_fs_type != 'pipefs'
  UNION ALL
  SELECT 'syscall' AS path, 'write' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.out_fs_type AS fs_type, e.out_mount_point AS mount_point, e.out_file_name AS file_name,
    e.out_inode AS inode, e.out_dev AS dev,
    CASE WHEN e.off_out = 0 THEN CAST(e.out_file_pos AS BIGINT)
         ELSE user_i64(e.off_out) - CASE WHEN x.ret > 0 THEN x.ret ELSE 0 END END AS offset, e.len AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('splice') AS call, 0 AS buf, e.out_mount_id AS mount_id, e.out_dentry_id AS dentry_id
  FROM syscalls.sys_enter_splice e JOIN syscalls.sys_exit_splice x ON e.tid = x.tid
  WHERE e.out_fs_type != 'pipefs'
  UNION ALL
  SELECT 'syscall' AS path, 'meta' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.fs_type AS fs_type, e.mount_point AS mount_point, e.file_name AS file_name,
    e.inode AS inode, e.dev AS dev,
    CAST(e.off AS BIGINT) AS offset, e.len AS bytes,
    CASE WHEN x.ret < 0 THEN x.ret ELSE CAST(e.len AS BIGINT) END AS ret,
    e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('mmap') AS call, 0 AS buf, e.mount_id AS mount_id, e.dentry_id AS dentry_id
  FROM syscalls.sys_enter_mmap e JOIN syscalls.sys_exit_mmap x ON e.tid = x.tid
  WHERE e.flags & 32 = 0
  UNION ALL
  SELECT 'syscall' AS path, 'sync' AS op,
    e.pid AS pid, e.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    e.fs_type AS fs_type, e.mount_point AS mount_point, e.file_name AS file_name,
    e.inode AS inode, e.dev AS dev,
    CAST(e.map_offset AS BIGINT) AS offset, 0 AS bytes, x.ret AS ret,
    e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('msync') AS call, 0 AS buf, e.mount_id AS mount_id, e.dentry_id AS dentry_id
  FROM syscalls.sys_enter_msync e JOIN syscalls.sys_exit_msync x ON e.tid = x.tid
  WHERE e.inode != 0
  UNION ALL
  SELECT 'syscall' AS path, 'open' AS op,
    x.pid AS pid, x.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    x.fs_type AS fs_type, x.mount_point AS mount_point, x.file_name AS file_name,
    x.inode AS inode, x.dev AS dev, 0 AS offset, 0 AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('open') AS call, 0 AS buf, x.mount_id AS mount_id, x.dentry_id AS dentry_id
  FROM syscalls.sys_enter_open e JOIN syscalls.sys_exit_open x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'open' AS op,
    x.pid AS pid, x.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    x.fs_type AS fs_type, x.mount_point AS mount_point, x.file_name AS file_name,
    x.inode AS inode, x.dev AS dev, 0 AS offset, 0 AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('openat') AS call, 0 AS buf, x.mount_id AS mount_id, x.dentry_id AS dentry_id
  FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.tid = x.tid
  UNION ALL
  SELECT 'syscall' AS path, 'open' AS op,
    x.pid AS pid, x.tid AS tid, e.comm AS comm, e.cgroup AS cgroup,
    x.fs_type AS fs_type, x.mount_point AS mount_point, x.file_name AS file_name,
    x.inode AS inode, x.dev AS dev, 0 AS offset, 0 AS bytes,
    x.ret AS ret, e.time AS start, x.time AS end, x.time - e.time AS latency,
    syscall_nr('creat') AS call, 0 AS buf, x.mount_id AS mount_id, x.dentry_id AS dentry_id
  FROM syscalls.sys_enter_creat e JOIN syscalls.sys_exit_creat x ON e.tid = x.tid
) u
