-- Rows: a tp_btf event's struct members as columns.
SELECT time, pid, rq, rq.__sector, rq.q.disk.disk_name FROM block.block_rq_issue
