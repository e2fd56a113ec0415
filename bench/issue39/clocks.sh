#!/bin/bash
# usage: clocks.sh [ROUNDS]
# Issue 39 item 2: what each clock a BPF program can read costs, and how close
# the call times it gives come to the caller's own clock_gettime brackets
# (Darshan's way of timing a call). For each clock (clocks/*.bpf.c, loaded by
# bench/reference/loader.c) and each workload (4 KiB and 64 KiB preads from
# tmpfs; 4 KiB O_DIRECT preads from the ext4 root disk, calls that sleep):
# the pairs counted against the workload's calls, Σ(exit − entry) against
# Σ brackets, and the in-BPF ns per run of the entry and exit programs
# (bpf_stats). Prints one Markdown row per clock and workload, per round.
set -e
HERE=$(cd "$(dirname "$0")" && pwd); ROUNDS=${1:-3}
B=$(mktemp -d); SHM=/dev/shm/ebq-clocks; DISK=/var/tmp/ebq-clocks
trap 'sysctl -q kernel.bpf_stats_enabled=0; rm -rf $B $SHM $DISK' EXIT
bpftool btf dump file /sys/kernel/btf/vmlinux format c > $B/vmlinux.h
cc -O2 -o $B/loader "$HERE/../reference/loader.c" -lbpf
cc -O2 -static -o $B/clockwork "$HERE/clocks/clockwork.c"
CLOCKS="none ktime boot coarse jiffies sched"
for c in $CLOCKS; do
  clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I$B -I"$HERE/clocks" -c "$HERE/clocks/$c.bpf.c" -o $B/$c.bpf.o
done
head -c 64M /dev/urandom > $SHM; head -c 64M /dev/urandom > $DISK; sync
WORKLOADS=("tmpfs-4k:$SHM 4096 200000 0" "tmpfs-64k:$SHM 65536 50000 0" "ext4-direct-4k:$DISK 4096 5000 1")
sysctl -q kernel.bpf_stats_enabled=1
echo "| round | clock | workload | calls | pairs | Σ brackets ms | Σ BPF ms | BPF / brackets | enter ns/run | exit ns/run | BPF ns per pair |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
  for w in "${WORKLOADS[@]}"; do # the brackets with nothing attached
    read -r _ calls _ brackets < <($B/clockwork ${w#*:})
    echo "| $r | (bare) | ${w%%:*} | $calls | | $(python3 -c "print(f'{$brackets/1e6:.1f}')") | | | | | |"
  done
  for c in $CLOCKS; do
    for w in "${WORKLOADS[@]}"; do
      name=${w%%:*}; args=${w#*:}
      # This loader's programs: the ones named enter/leave that were not there before it.
      before=$(bpftool prog show -j | python3 -c "import json,sys; print(max([p['id'] for p in json.load(sys.stdin)] or [0]))")
      $B/loader $B/$c.bpf.o 2>$B/loader.err & l=$!
      until grep -q attached $B/loader.err 2>/dev/null; do
        sleep 0.1
        kill -0 $l 2>/dev/null || { wait $l || true; echo "| $r | $c | $name | cannot load: $(grep -m1 'cannot use\|invalid' $B/loader.err) |"; continue 2; }
      done
      ids=""
      until [[ $(wc -w <<<"$ids") == 2 ]]; do # bpftool fails when another user's program goes away mid-listing
        ids=$(bpftool prog show -j 2>/dev/null | python3 -c "
import json,sys
print(' '.join(str(p['id']) for p in json.load(sys.stdin) if p['name'] in ('enter','leave') and p['id'] > $before))" 2>/dev/null || true)
      done
      read -r _ calls _ brackets < <($B/clockwork $args)
      stats=$(for id in $ids; do bpftool prog show id $id -j; echo; done | python3 -c "
import json,sys
ns={}; tot=0
for line in sys.stdin:
    if line.strip():
        p=json.loads(line); ns[p['name']]=p['run_time_ns']/max(p.get('run_cnt',0),1); tot+=p['run_time_ns']
print('%.1f %.1f %d' % (ns.get('enter',0), ns.get('leave',0), tot))")
      kill -INT $l; wait $l || true
      pairs=$(awk '/map events total/ {print $4}' $B/loader.err)
      sum=$(awk '/map sum_ns total/ {print $4}' $B/loader.err)
      python3 -c "
calls,pairs,br,s=$calls,$pairs,$brackets,$sum
en,ex,tot='$stats'.split()
print(f'| $r | $c | $name | {calls} | {pairs} | {br/1e6:.1f} | {s/1e6:.1f} | {s/br:.4f} | {en} | {ex} | {int(tot)/max(pairs,1):.1f} |')"
    done
  done
done
