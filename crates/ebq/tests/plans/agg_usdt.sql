-- Aggregate: a USDT probe's arguments.
SELECT arg2, COUNT(*) FROM usdt:/usr/lib/postgresql/15/bin/postgres:smgr__md__read__start GROUP BY arg2
