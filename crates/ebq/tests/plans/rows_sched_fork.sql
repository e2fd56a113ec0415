-- Rows: a classic non-syscall tracepoint with string arguments.
SELECT parent_comm, child_pid FROM sched.sched_process_fork WHERE parent_comm != 'bash'
