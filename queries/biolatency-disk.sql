-- biolatency-disk: block I/O latency histogram per disk (major:minor), in microseconds (bcc biolatency -D).
SELECT c.dev >> 20 AS major, c.dev & 1048575 AS minor, HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.dev = c.dev AND i.sector = c.sector
GROUP BY major, minor;
