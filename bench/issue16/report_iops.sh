#!/bin/bash
# usage: report_iops.sh EBQ ROUNDS
# fio 4 KiB psync randread on tmpfs, 4 jobs, 5 s: IOPS bare, under `ebq report io` (folded in the kernel)
# and under an aggregate over io.ops, each with the default plan and with the plan before per-thread
# pairs and raw raw_syscalls (`--attach classic --pairs hash`), alternating within each round.
EBQ=$(realpath "$1"); ROUNDS=${2:-3}
DIR=/dev/shm/ebq-issue16-report; mkdir -p $DIR; cd $DIR
FIO="fio --name=r --directory=$DIR --size=64M --rw=randread --bs=4k --numjobs=4 --time_based --runtime=5 --ioengine=psync --group_reporting --output-format=json"
AGG="SELECT path, op, COUNT(*), SUM(bytes) FROM io.ops GROUP BY path, op"
OLD="--attach classic --pairs hash"
iops() { python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['jobs'][0]['read']['iops']))" "$1"; }
$FIO --runtime=1 --output=/dev/null
for r in $(seq "$ROUNDS"); do
  $FIO --output=b.json >/dev/null
  $EBQ report io --format json -c "$FIO --output=f.json" >/dev/null 2>&1
  $EBQ report io --format json $OLD -c "$FIO --output=fo.json" >/dev/null 2>&1
  $EBQ -c "$FIO --output=a.json" "$AGG" >/dev/null 2>&1
  $EBQ $OLD -c "$FIO --output=ao.json" "$AGG" >/dev/null 2>&1
  b=$(iops b.json)
  loss() { python3 -c "print(f'{$1:,} ({100*(1-$1/$b):.1f} %)')"; }
  echo "round $r: bare $(printf "%'d" $b) | report $(loss $(iops f.json)) | report (old plan) $(loss $(iops fo.json)) | io.ops aggregate $(loss $(iops a.json)) | aggregate (old plan) $(loss $(iops ao.json))"
done
cd /; rm -rf $DIR
