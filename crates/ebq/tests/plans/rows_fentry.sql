-- Aggregate: an fentry program (BTF-typed function arguments).
SELECT comm, COUNT(*) FROM fentry:vfs_write GROUP BY comm
