-- runqlat: run-queue latency, from a task's wakeup (or its preemption while still runnable) to its switch onto a CPU, as a log2 histogram in microseconds (bcc runqlat).
-- As libbpf-tools runqlat: tp_btf; a task switched out with prev->__state TASK_RUNNING (0) waits in the run queue again; the idle task (pid 0) is never timed.
-- `WHERE q.tgid = PID` times one process's threads (runqlat -p PID).
SELECT HIST((s.time - q.time) / 1000) AS usecs
FROM (SELECT p.pid AS pid, p.tgid AS tgid, time FROM sched.sched_wakeup
      UNION ALL SELECT p.pid AS pid, p.tgid AS tgid, time FROM sched.sched_wakeup_new
      UNION ALL SELECT prev.pid AS pid, prev.tgid AS tgid, time FROM sched.sched_switch
                WHERE prev.__state = 0 AND prev.pid > 0) q
JOIN sched.sched_switch s ON q.pid = s.next.pid;
