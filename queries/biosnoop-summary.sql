-- biosnoop-summary: block I/O by issuing process, disk and request type: requests, bytes, latency (bcc biosnoop, aggregated).
-- Requests pair on the request itself (tp_btf); `disk` is the request's disk as biosnoop's DISK column names it (vda, loop3;
-- a partition's I/O counts under its disk, as there); flags are named as biolatency -F names them; comm and pid are the
-- issuing task's (system columns: a tp_btf program has no record, see README "Names").
SELECT i.comm, i.pid, c.rq.q.disk.disk_name AS disk, req_flags(c.rq.cmd_flags) AS flags,
       COUNT(*) AS requests, SUM(c.nr_bytes) AS bytes,
       AVG(c.time - i.time) / 1000 AS avg_us, MAX(c.time - i.time) / 1000 AS max_us
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq
GROUP BY i.comm, i.pid, disk, c.rq.cmd_flags
ORDER BY requests DESC;
