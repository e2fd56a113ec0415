-- JOIN: two USDT probes paired on the thread (pg-relation-reads).
SELECT s.arg4 AS relation, COUNT(*) AS reads, SUM(d.arg6) AS bytes, HIST((d.time - s.time) / 1000) AS usecs FROM usdt:/usr/lib/postgresql/15/bin/postgres:smgr__md__read__start s JOIN usdt:/usr/lib/postgresql/15/bin/postgres:smgr__md__read__done d ON s.tid = d.tid GROUP BY s.arg4
