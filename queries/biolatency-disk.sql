-- biolatency-disk: block I/O latency histogram per disk, in microseconds (bcc biolatency -D).
SELECT c.rq.q.disk.disk_name AS disk, HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq
GROUP BY disk;
