#!/bin/bash
# usage: inbpf_file_keys.sh EBQ RUNS "OPTS": in-BPF ns per read of the file-column keys, ebq run system-wide
# (scope 0, as ebq bench pervent runs it) with `explain --analyze … --duration 4` while dd bs=1 reads a page-cached
# ext4 file pinned to CPU 0: query program ms / events seen.
. "$(dirname "$0")/../inbpf_ns.sh"
EBQ=$1; RUNS=${2:-3}; OPTS=$3
F=${DATA:-/var/tmp/ebq-issue16.bin}; [ -f $F ] || head -c 4000000 /dev/urandom > $F; cat $F > /dev/null
while IFS='|' read -r name q; do
  all=""
  for i in $(seq $RUNS); do
    $EBQ explain --analyze $OPTS "$q" --duration 4 > /tmp/ebq-issue16.out 2>&1 & p=$!
    sleep 1.2; taskset -c 0 dd if=$F of=/dev/null bs=1 count=1000000 status=none; wait $p
    all="$all $(inbpf_ns /tmp/ebq-issue16.out)"
  done
  echo "$name:$all"
done <<'Q'
pid|SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid
inode|SELECT inode, COUNT(*) FROM syscalls.sys_enter_read GROUP BY inode
fs_type,file_name|SELECT fs_type, file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY fs_type, file_name
mount_point,file_name|SELECT mount_point, file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY mount_point, file_name
Q
