-- UNION ALL of start events whose branches rename their columns into the union's (runqlat's shape on classic tracepoints).
SELECT HIST((s.time - q.time) / 1000) AS usecs FROM (SELECT child_pid AS pid, time FROM sched.sched_process_fork UNION ALL SELECT prev_pid AS pid, time FROM sched.sched_switch WHERE prev_state = 0) q JOIN sched.sched_switch s ON q.pid = s.next_pid
