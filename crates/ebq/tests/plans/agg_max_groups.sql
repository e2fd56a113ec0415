-- Aggregate: a small --max-groups (the group map's size; more groups count as dropped).
-- options: max_groups=64
SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid
