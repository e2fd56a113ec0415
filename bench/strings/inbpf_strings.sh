#!/bin/bash
# usage: inbpf_strings.sh EBQ RUNS: in-BPF ns per openat of string-column shapes (issue: big strings off the
# BPF stack), `explain --analyze -c` around 200,000 opens of /etc/hostname by python3: query program ms / events seen.
. "$(dirname "$0")/../inbpf_ns.sh"
EBQ=$1; RUNS=${2:-3}
CMD="python3 -c \"import os
for i in range(200000): os.close(os.open('/etc/hostname', os.O_RDONLY))\""
while IFS='|' read -r name q; do
  all=""
  for i in $(seq $RUNS); do
    $EBQ explain --analyze "$q" -c "$CMD" > /tmp/ebq-strings.out 2>&1
    all="$all $(inbpf_ns /tmp/ebq-strings.out)"
  done
  echo "$name:$all"
done <<'Q'
rows filename|SELECT comm, filename FROM syscalls.sys_enter_openat
group by filename|SELECT filename, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY filename
filter+group filename|SELECT filename, COUNT(*) FROM syscalls.sys_enter_openat WHERE filename LIKE '/etc/%' GROUP BY filename
filter+rows filename|SELECT time, filename FROM syscalls.sys_enter_openat WHERE filename LIKE '/etc/%'
Q
