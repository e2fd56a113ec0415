-- Expanding event: aio.submit runs the row code once per iocb of io_submit (bpf_loop).
SELECT opcode, COUNT(*), SUM(nbytes) FROM aio.submit GROUP BY opcode
