#!/usr/bin/env bash
# Issue 39 item 1: what an idle tracepoint on the AIO calls costs every other
# system call. fio 4 KiB psync randread (4 jobs, 4 s, /dev/shm) under the
# report's hand-written floor (bench/reference/report_floor.bpf.c), then the
# floor plus, idle for fio:
# - `classic`: bpftrace on the classic syscalls:sys_enter_io_submit and
#   sys_exit_io_getevents tracepoints (io.ops' aio.submit and aio.complete
#   attach there). A classic syscall tracepoint turns on the kernel's perf
#   hooks (perf_syscall_enter/exit), which run at every system call.
# - `raw`: a second raw sys_enter/sys_exit pair filtered by call number
#   (idle_raw_pair.bpf.c): two more programs at every system call.
# Prints fio's IOPS per configuration, ROUNDS rounds (default 4). Build the
# floor and loader once with `ebq bench report --quick --out DIR`; pass DIR/reference.
#
# Usage: bench/issue39/perf_hooks.sh REFERENCE_DIR [ROUNDS]
set -euo pipefail
ref=${1:?usage: perf_hooks.sh REFERENCE_DIR [ROUNDS]}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work" /dev/shm/ebq-hooks' EXIT
mkdir -p /dev/shm/ebq-hooks
clang -O2 -g -target bpf -D__TARGET_ARCH_x86 -I"$ref" -c "$here/idle_raw_pair.bpf.c" -o "$work/idle_raw_pair.bpf.o"

iops() {
    fio --name=ebqbench --directory=/dev/shm/ebq-hooks --rw=randread --bs=4k --ioengine=psync --size=64M \
        --numjobs=4 --time_based --runtime=4000ms --group_reporting --output-format=json |
        python3 -c "import json,sys; print(int(json.load(sys.stdin)['jobs'][0]['read']['iops']))"
}
# `load OBJECT NAME`: OBJECT under the bench's loader until killed, its pid in $NAME, once attached.
load() {
    "$ref/loader" "$1" /dev/null >/dev/null 2>"$work/$2.err" &
    printf -v "$2" %s "$!"
    for _ in $(seq 1 100); do grep -q attached "$work/$2.err" && break; sleep 0.1; done
}

iops >/dev/null # lays the files out once
for r in $(seq 1 "${2:-4}"); do
    load "$ref/report_floor.bpf.o" floor
    echo "round $r floor: $(iops)"
    bpftrace -e 'tracepoint:syscalls:sys_enter_io_submit { @a = count(); } tracepoint:syscalls:sys_exit_io_getevents { @b = count(); }' >/dev/null 2>&1 &
    bt=$!
    sleep 3
    echo "round $r floor+classic: $(iops)"
    kill -INT "$bt"; wait "$bt" || true
    load "$work/idle_raw_pair.bpf.o" raw
    echo "round $r floor+raw: $(iops)"
    kill -INT "$raw"; wait "$raw" || true
    kill -INT "$floor"; wait "$floor" || true
done
