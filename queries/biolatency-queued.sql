-- biolatency-queued: block I/O latency including time queued, insert to completion, in microseconds (bcc biolatency -Q).
-- Requests the block layer dispatches without queueing never pass block_rq_insert: they show as unmatched.
SELECT HIST((c.time - q.time) / 1000) AS usecs
FROM block.block_rq_insert q JOIN block.block_rq_complete c ON q.dev = c.dev AND q.sector = c.sector;
