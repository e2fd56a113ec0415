-- JOIN: block requests paired on the request pointer (tp_btf), per disk (biolatency -D).
SELECT c.rq.q.disk.disk_name AS disk, HIST((c.time - i.time) / 1000) AS usecs FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq GROUP BY disk
