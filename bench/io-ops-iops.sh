#!/bin/bash
# Issue 14's cost figure: fio 4 KiB randread, IOPS per engine bare, under `ebq report io`
# and under an aggregate over io.ops (system calls, io_uring requests and AIO requests).
# Every engine on tmpfs (/dev/shm); libaio also with O_DIRECT on the root file system,
# where its requests are iomap's direct I/O, the path io.ops and the report see as `aio`
# (on tmpfs libaio's buffered requests run inside io_submit, which neither traces).
# ENGINES overrides the list: "engine:file:extra fio options" entries.
E=${EBQ:-$(dirname "$0")/../target/release/ebq}
T=${TMPDIR:-/tmp}
SHM=/dev/shm/ebq-ioops-data
DISK=/var/tmp/ebq-ioops-data
head -c $((64<<20)) /dev/zero > $SHM
head -c $((64<<20)) /dev/zero > $DISK && sync
ENGINES=${ENGINES:-"sync:$SHM: psync:$SHM: pvsync2:$SHM: posixaio:$SHM: libaio:$SHM: io_uring:$SHM: libaio:$DISK:--direct=1"}
fio_cmd() { echo "fio --name=j --filename=$2 --ioengine=$1 $3 --rw=randread --bs=4k --size=64M --time_based --runtime=4 --output-format=json --output=$T/ebq-ioops-$1.json"; }
iops() { python3 -c "import json;print(round(json.load(open('$T/ebq-ioops-$1.json'))['jobs'][0]['read']['iops']))"; }
AGG="SELECT path, op, COUNT(*), SUM(bytes) FROM io.ops GROUP BY path, op"
for round in 1 2; do
for spec in $ENGINES; do
  IFS=: read -r eng file extra <<< "$spec"
  extra=${extra//,/ }
  $(fio_cmd $eng $file "$extra"); bare=$(iops $eng)
  $E report io -c "$(fio_cmd $eng $file "$extra")" > /dev/null 2>$T/ebq-ioops-report.err; report=$(iops $eng)
  $E -c "$(fio_cmd $eng $file "$extra")" "$AGG" > $T/ebq-ioops-agg.out 2>$T/ebq-ioops-agg.err; agg=$(iops $eng)
  rows=$(grep -c . $T/ebq-ioops-agg.out)
  echo "round $round $eng $file $extra bare=$bare report_io=$report io_ops_aggregate=$agg ($rows lines) | $(tail -1 $T/ebq-ioops-agg.err | cut -c1-60)"
done
done
rm -f $SHM $DISK "$T"/ebq-ioops-*
