-- Aggregate: LIKE '%abc%' (contains) as a filter and NOT LIKE in a SUM, on a user-memory string.
SELECT comm, COUNT(*), SUM(CASE WHEN filename NOT LIKE '%/lib%' THEN 1 ELSE 0 END) AS other FROM syscalls.sys_enter_openat WHERE filename LIKE '%.so%' GROUP BY comm
