-- UNION ALL of tp_btf start events joined on the request pointer.
SELECT HIST((c.time - q.time) / 1000) FROM (SELECT rq, time FROM block.block_rq_issue UNION ALL SELECT rq, time FROM block.block_rq_complete WHERE rq.__data_len > 0) q JOIN block.block_rq_complete c ON q.rq = c.rq
