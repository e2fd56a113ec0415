#!/bin/bash
# Issue 14's cost figure: fio 4 KiB randread on tmpfs, IOPS per engine bare, under `ebq report io`
# and under an aggregate over io.ops (both see system calls and io_uring requests).
E=${EBQ:-$(dirname "$0")/../target/release/ebq}
T=${TMPDIR:-/tmp}
F=/dev/shm/ebq-ioops-data
head -c $((64<<20)) /dev/zero > $F
fio_cmd() { echo "fio --name=j --filename=$F --ioengine=$1 --rw=randread --bs=4k --size=64M --time_based --runtime=4 --output-format=json --output=$T/ebq-ioops-$1.json"; }
iops() { python3 -c "import json;print(round(json.load(open('$T/ebq-ioops-$1.json'))['jobs'][0]['read']['iops']))"; }
AGG="SELECT path, op, COUNT(*), SUM(bytes) FROM io.ops GROUP BY path, op"
for round in 1 2; do
for eng in psync pvsync2 io_uring; do
  $(fio_cmd $eng); bare=$(iops $eng)
  $E report io -c "$(fio_cmd $eng)" > /dev/null 2>$T/ebq-ioops-report.err; report=$(iops $eng)
  $E -c "$(fio_cmd $eng)" "$AGG" > /dev/null 2>$T/ebq-ioops-agg.err; agg=$(iops $eng)
  echo "round $round $eng bare=$bare report_io=$report io_ops_aggregate=$agg | $(tail -1 $T/ebq-ioops-agg.err | cut -c1-60)"
done
done
rm -f $F "$T"/ebq-ioops-*
