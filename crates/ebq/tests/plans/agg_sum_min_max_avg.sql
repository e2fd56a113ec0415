-- Aggregate: SUM, MIN, MAX and AVG (sum + count) of one argument, grouped: one value struct, one lookup.
SELECT fd, SUM(count), MIN(count), MAX(count), AVG(count) FROM syscalls.sys_enter_read GROUP BY fd
