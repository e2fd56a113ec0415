-- biolatency-queued: block I/O latency including time queued, in microseconds (bcc biolatency -Q).
-- A request starts when it is inserted into its queue's I/O scheduler, or, on a queue without one
-- (scheduler none: requests are never inserted), when it is issued; as libbpf-tools biolatency -Q.
SELECT HIST((c.time - q.time) / 1000) AS usecs
FROM (SELECT rq, time FROM block.block_rq_insert
      UNION ALL SELECT rq, time FROM block.block_rq_issue WHERE rq.q.elevator = 0) q
JOIN block.block_rq_complete c ON q.rq = c.rq;
