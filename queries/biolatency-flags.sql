-- biolatency-flags: block I/O latency histogram per request type and flags (Sync-Write, ReadAhead-Read, …), in microseconds (bcc biolatency -F).
-- Flags are the request's cmd_flags, named with this kernel's own enums as libbpf-tools biolatency -F names them; requests pair on the request itself (tp_btf).
SELECT req_flags(c.rq.cmd_flags) AS flags, HIST((c.time - i.time) / 1000) AS usecs
FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq
GROUP BY c.rq.cmd_flags;
