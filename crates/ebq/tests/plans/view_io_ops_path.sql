-- View: io.ops restricted to one path (aio): the other branches are pruned.
SELECT path, op, file_name, offset, bytes, ret, latency FROM io.ops WHERE path = 'aio'
