-- pg-relation-reads: which relations PostgreSQL reads from disk (storage manager reads, served by the OS page cache or the device), how much, how slowly: reads, bytes, latency histogram and p99 in µs per (tablespace, database, relation).
SELECT s.arg2 AS tablespace, s.arg3 AS database, s.arg4 AS relation, COUNT(*) AS reads,
       SUM(d.arg6) AS bytes, HIST((d.time - s.time) / 1000) AS usecs, P99((d.time - s.time) / 1000) AS p99_us
FROM usdt:{postgres}:smgr__md__read__start s
JOIN usdt:{postgres}:smgr__md__read__done d ON s.tid = d.tid
GROUP BY s.arg2, s.arg3, s.arg4
ORDER BY bytes DESC;
-- param: postgres = /usr/lib/postgresql/15/bin/postgres (the postgres binary: a path)
