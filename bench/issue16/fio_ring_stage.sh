#!/bin/bash
# usage: fio_ring_stage.sh EBQ ROUNDS STAGE: in-BPF ns per event of a row query cut after STAGE (--bench-stage reserve|commit)
# under fio 4 KiB randread on tmpfs, 4 jobs, --rings shared vs per-cpu alternating (explain --analyze)
EBQ=$1; ROUNDS=${2:-3}; STAGE=${3:-commit}
mkdir -p /dev/shm/ebq-issue16
FIO="fio --name=r --directory=/dev/shm/ebq-issue16 --size=64M --rw=randread --bs=4k --numjobs=4 --time_based --runtime=6 --ioengine=psync --group_reporting --output-format=json"
$FIO --runtime=1 >/dev/null
Q="SELECT time, pid, count FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'"
for r in $(seq $ROUNDS); do
  for mode in shared per-cpu; do
    $FIO > /tmp/ebq-issue16-fio.json & f=$!; sleep 1
    out=$($EBQ explain --analyze --rings $mode --bench-stage $STAGE --format csv "$Q" --duration 4 2>&1 | grep -v "^[0-9]")
    wait $f
    iops=$(python3 -c 'import json; print(round(json.load(open("/tmp/ebq-issue16-fio.json"))["jobs"][0]["read"]["iops"]))')
    ms=$(echo "$out" | grep 'query program' | head -1 | sed -E 's/.* runs, ([0-9.]+) ms in BPF.*/\1/')
    ev=$(echo "$out" | grep -E '^  events' | sed -E 's/ *events +([0-9]+) seen.*/\1/')
    echo "round $r $mode: $(echo "$ms $ev" | awk '{printf "%.1f ns per event", $1*1e6/$2}') ($ev events, $ms ms in BPF) | $(echo "$out" | grep -E '^  events' | sed 's/^ *//') | fio iops $iops"
  done
done
rm -rf /dev/shm/ebq-issue16
