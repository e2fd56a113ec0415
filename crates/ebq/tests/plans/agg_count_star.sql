-- Aggregate: COUNT(*) with no GROUP BY and no window: one per-CPU array slot.
SELECT COUNT(*) FROM syscalls.sys_enter_read
