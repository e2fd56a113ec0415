-- Expanding event: aio.complete, one row per io_event io_getevents returned.
SELECT time, ctx_id, iocb, res FROM aio.complete WHERE res < 0
