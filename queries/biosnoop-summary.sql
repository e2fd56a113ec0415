-- biosnoop-summary: block I/O by issuing process and disk: requests, bytes, latency (bcc biosnoop, aggregated).
SELECT i.comm, i.pid, c.dev >> 20 AS major, c.dev & 1048575 AS minor, i.rwbs,
       COUNT(*) AS requests, SUM(c.nr_sector) * 512 AS bytes,
       AVG(c.time - i.time) / 1000 AS avg_us, MAX(c.time - i.time) / 1000 AS max_us
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.dev = c.dev AND i.sector = c.sector
GROUP BY i.comm, i.pid, major, minor, i.rwbs
ORDER BY requests DESC;
