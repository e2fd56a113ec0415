SELECT
  COUNT(*) AS n, -- every read
  MAX(time) AS last
FROM syscalls.sys_enter_pread64
WHERE comm = 'x'
GROUP BY fd