-- biolatency-flags: block I/O latency histogram per request type (rwbs: R read, W write, S sync, F flush…), in microseconds (bcc biolatency -F).
SELECT i.rwbs, HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.dev = c.dev AND i.sector = c.sector
GROUP BY i.rwbs;
