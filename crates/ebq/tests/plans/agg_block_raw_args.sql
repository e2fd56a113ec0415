-- Aggregate: a raw tracepoint (tp_btf) reading kernel struct members.
SELECT rq.q.disk.disk_name, COUNT(*), SUM(nr_bytes) FROM block.block_rq_complete GROUP BY rq.q.disk.disk_name
