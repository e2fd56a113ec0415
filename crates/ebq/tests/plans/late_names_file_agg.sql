-- Late names (file columns): GROUP BY file_name. On a kernel with bpf_rdonly_cast the key would be the dentry and the
-- name read once per group (plan::late_names); the fixture's BTF has none, so the name is read per event into the key.
SELECT file_name, COUNT(*), SUM(count) FROM syscalls.sys_enter_write GROUP BY file_name
