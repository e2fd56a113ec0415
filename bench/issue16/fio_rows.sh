#!/bin/bash
# usage: fio_rows.sh EBQ ROUNDS [EBQ OPTIONS]
# fio 4 KiB randread on tmpfs, 4 jobs (psync), 5 s; IOPS with no tracer, with an aggregate query, with a row query (rows to /dev/null as CSV)
EBQ=$1; ROUNDS=${2:-3}; shift 2
mkdir -p /dev/shm/ebq-issue16
FIO="fio --name=r --directory=/dev/shm/ebq-issue16 --size=64M --rw=randread --bs=4k --numjobs=4 --time_based --runtime=5 --ioengine=psync --group_reporting --output-format=json"
iops() { python3 -c 'import json,sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["iops"]))'; }
$FIO --runtime=1 >/dev/null
for r in $(seq $ROUNDS); do
  base=$($FIO | iops)
  $EBQ "$@" "SELECT pid, COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm = 'fio' GROUP BY pid" > /tmp/ebq-issue16-agg.out 2>&1 & p=$!; sleep 1.5
  agg=$($FIO | iops); kill -INT $p; wait $p
  $EBQ "$@" --format csv "SELECT time, pid, count FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'" > /dev/null 2>/tmp/ebq-issue16-row.err & p=$!; sleep 1.5
  row=$($FIO | iops); kill -INT $p; wait $p
  echo "round $r: base $base agg $agg row $row  loss agg $(echo "$base $agg" | awk '{printf "%.1f%%", 100*($1-$2)/$1}') row $(echo "$base $row" | awk '{printf "%.1f%%", 100*($1-$2)/$1}')  $(grep -h 'events seen' /tmp/ebq-issue16-row.err | tail -1)"
done
rm -rf /dev/shm/ebq-issue16
