#!/bin/bash
# usage: pair_floor.sh ROUNDS
# The hand-written floor of enter→exit pairing (pair_floor/*.bpf.c, loaded by bench/reference/loader.c):
# fio 4 KiB psync randread on tmpfs, 4 jobs, 5 s, IOPS bare and with each program pair attached, then
# in-BPF ns per run (bpf_stats on, which itself adds ~47 ns per run here: the `empty` row).
set -e
HERE=$(cd "$(dirname "$0")" && pwd); ROUNDS=${1:-3}
B=$(mktemp -d); D=/dev/shm/ebq-pair-floor; mkdir -p $D
bpftool btf dump file /sys/kernel/btf/vmlinux format c > $B/vmlinux.h
cc -O2 -o $B/loader "$HERE/../reference/loader.c" -lbpf
for p in empty task_storage hash; do
  clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I$B -I"$HERE/pair_floor" -c "$HERE/pair_floor/$p.bpf.c" -o $B/$p.bpf.o
done
FIO="fio --name=r --directory=$D --size=64M --rw=randread --bs=4k --numjobs=4 --time_based --runtime=5 --ioengine=psync --group_reporting --output-format=json --output=$B/fio.json"
iops() { python3 -c "import json; print(int(json.load(open('$B/fio.json'))['jobs'][0]['read']['iops']))"; }
under() { $B/loader $B/$1.bpf.o 2>/dev/null & local l=$!; sleep 1; $FIO >/dev/null; kill -INT $l; wait $l || true; }
for r in $(seq "$ROUNDS"); do
  $FIO >/dev/null; bare=$(iops); line="round $r: bare $bare"
  for p in empty task_storage hash; do
    under $p; n=$(iops); line="$line | $p $n ($(python3 -c "print(f'{100*(1-$n/$bare):.1f}')") %)"
  done
  echo "$line"
done
sysctl -q kernel.bpf_stats_enabled=1
for p in empty task_storage hash; do
  $B/loader $B/$p.bpf.o 2>/dev/null & l=$!; sleep 1; $FIO --runtime=2 >/dev/null
  bpftool prog show -j | python3 -c "
import json,sys
ns={p['name']: p['run_time_ns']/p['run_cnt'] for p in json.load(sys.stdin) if p['name'] in ('enter','leave') and p.get('run_cnt')}
print('$p: ns/run enter %.1f, exit %.1f' % (ns.get('enter',0), ns.get('leave',0)))"
  kill -INT $l; wait $l || true
done
sysctl -q kernel.bpf_stats_enabled=0
rm -rf $B $D
