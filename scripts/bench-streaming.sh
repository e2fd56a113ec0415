#!/usr/bin/env bash
# Streaming figures for issue 4, ebq against bpftrace printf on the same workloads:
#  1. rows/s delivered to a file: `dd bs=1` issuing N read(2) calls, every one
#     streamed (time, pid, comm, fd, count), and what each tool reports lost;
#  2. fio 4 KiB throughput while streaming every pread64 (psync, randread, tmpfs):
#     no tracing vs ebq vs bpftrace, loss in % of the untraced run.
# Usage: scripts/bench-streaming.sh [N] [FIO_SECONDS]   (run as root, after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${1:-2000000}
SECS=${2:-10}
EBQ=./target/release/ebq
OUT=$(mktemp -d /tmp/ebq-streaming.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

now() { date +%s.%N; }

echo "# machine: $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "## 1. rows/s delivered to a file ($N read(2) calls of dd bs=1)"
printf '%-10s %12s %12s %10s %12s\n' tool rows lost seconds rows/s
dd_cmd="$(command -v dd) if=/dev/zero of=/dev/null bs=1 count=$N status=none"

t0=$(now)
$EBQ --ringbuf-size 67108864 --format csv -o "$OUT/ebq.csv" -c "$dd_cmd" \
    "SELECT time, pid, comm, fd, count FROM syscalls.sys_enter_read WHERE comm = 'dd'" 2>"$OUT/ebq.err"
t1=$(now)
rows=$(($(wc -l <"$OUT/ebq.csv") - 1))
lost=$(sed -n 's/.* \([0-9]*\) dropped.*/\1/p' "$OUT/ebq.err" | tail -1)
printf '%-10s %12d %12s %10.3f %12.0f\n' ebq "$rows" "${lost:-?}" "$(echo "$t1 - $t0" | bc)" "$(echo "$rows / ($t1 - $t0)" | bc -l)"

t0=$(now)
# bpftrace splits -c itself (no shell); cpid is that child, what ebq's -c traces.
bpftrace -o "$OUT/bt.txt" -e 'tracepoint:syscalls:sys_enter_read /pid == cpid/ {
    printf("%llu,%d,%s,%d,%llu\n", nsecs, pid, comm, args->fd, args->count); }' -c "$dd_cmd" \
    >/dev/null 2>"$OUT/bt.err"
t1=$(now)
rows=$(grep -c '^[0-9]*,' "$OUT/bt.txt" || true)
lost=$({ grep -ho 'Lost [0-9]* events' "$OUT/bt.txt" "$OUT/bt.err" || true; } | awk '{s += $2} END {print s + 0}')
printf '%-10s %12d %12s %10.3f %12.0f\n' bpftrace "$rows" "$lost" "$(echo "$t1 - $t0" | bc)" "$(echo "$rows / ($t1 - $t0)" | bc -l)"

echo
echo "## 2. fio 4 KiB psync randread on tmpfs, ${SECS} s, every pread64 streamed to a file"
mkdir -p "$OUT/tmpfs"
mount -t tmpfs -o size=1200m tmpfs "$OUT/tmpfs"
trap 'umount "$OUT/tmpfs" 2>/dev/null; rm -rf "$OUT"' EXIT
fio_cmd="$(command -v fio) --name=s --directory=$OUT/tmpfs --size=1g --bs=4k --rw=randread --ioengine=psync --time_based --runtime=$SECS --output-format=json --output=$OUT/fio.json"
fio --name=s --directory="$OUT/tmpfs" --size=1g --bs=4k --rw=randread --ioengine=psync --runtime=1 --time_based >/dev/null # lay out the file
iops() { python3 -c "import json,sys; print(round(json.load(open('$OUT/fio.json'))['jobs'][0]['read']['iops']))"; }
printf '%-10s %12s %10s %12s\n' tracing iops loss% rows
$fio_cmd
base=$(iops)
printf '%-10s %12d %10s %12s\n' none "$base" - -
$EBQ --ringbuf-size 67108864 --format csv -o "$OUT/fio-ebq.csv" -c "$fio_cmd" \
    "SELECT time, pid, tid, fd, count, pos FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'" 2>"$OUT/ebq2.err"
v=$(iops)
printf '%-10s %12d %10.1f %12d\n' ebq "$v" "$(echo "($base - $v) * 100 / $base" | bc -l)" "$(($(wc -l <"$OUT/fio-ebq.csv") - 1))"
bpftrace -o "$OUT/fio-bt.txt" -e 'tracepoint:syscalls:sys_enter_pread64 /comm == "fio"/ {
    printf("%llu,%d,%d,%d,%llu,%lld\n", nsecs, pid, tid, args->fd, args->count, args->pos); }' -c "$fio_cmd" \
    >/dev/null 2>"$OUT/bt2.err"
v=$(iops)
printf '%-10s %12d %10.1f %12d\n' bpftrace "$v" "$(echo "($base - $v) * 100 / $base" | bc -l)" "$(grep -c '^[0-9]*,' "$OUT/fio-bt.txt" || true)"
