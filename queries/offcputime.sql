-- offcputime: time threads spent switched out (blocked or preempted), by process and kernel stack at switch-out (bcc offcputime).
SELECT s.prev.comm AS comm, s.kstack AS kstack, COUNT(*) AS switches,
       SUM(e.time - s.time) / 1000 AS off_us, HIST(e.time - s.time) AS off_ns
FROM sched.sched_switch s JOIN sched.sched_switch e ON s.prev.pid = e.next.pid
GROUP BY s.prev.comm, s.kstack
ORDER BY off_us DESC
LIMIT {top};
-- param: top = 20 (rows shown)
