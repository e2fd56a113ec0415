-- Expanding events on both sides of a JOIN (submission to reap), with file columns.
SELECT s.fs_type, s.file_name, COUNT(*), SUM(c.res), HIST(c.time - s.time) FROM aio.submit s JOIN aio.complete c ON s.pid = c.pid AND s.iocb = c.iocb WHERE s.opcode IN (0, 1) GROUP BY s.fs_type, s.file_name
