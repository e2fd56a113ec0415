-- cpudist: on-CPU time, from a task's switch onto a CPU to its switch off it while still runnable (preempted or yielding), as a log2 histogram in microseconds (libbpf-tools cpudist).
-- As libbpf-tools cpudist: tp_btf; a stint that ends in sleep (prev->__state not TASK_RUNNING) is not timed; the idle task (pid 0) is left out.
-- `AND s.next.tgid = PID` in WHERE times one process's threads (cpudist -p PID).
SELECT HIST((e.time - s.time) / 1000) AS usecs
FROM sched.sched_switch s JOIN sched.sched_switch e ON s.next.pid = e.prev.pid
WHERE s.next.pid > 0 AND e.prev.__state = 0;
