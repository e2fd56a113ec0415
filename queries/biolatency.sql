-- biolatency: block I/O latency, issue to completion, as a log2 histogram in microseconds (bcc biolatency).
SELECT HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.dev = c.dev AND i.sector = c.sector;
