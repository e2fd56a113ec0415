-- JOIN: sched_switch with itself (prev pid to next pid), by kernel stack (offcputime on the classic tracepoint).
SELECT s.prev_comm AS comm, s.kstack AS kstack, COUNT(*) AS switches, SUM(e.time - s.time) / 1000 AS off_us FROM sched.sched_switch s JOIN sched.sched_switch e ON s.prev_pid = e.next_pid GROUP BY s.prev_comm, s.kstack ORDER BY off_us DESC LIMIT 20
