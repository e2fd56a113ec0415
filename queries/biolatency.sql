-- biolatency: block I/O latency, issue to completion, as a log2 histogram in microseconds (bcc biolatency).
-- Pairs on the request itself (tp_btf, as libbpf-tools biolatency does).
SELECT HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq;
