#!/usr/bin/env bash
# Issue 39 item 1: where `ebq report io`'s in-BPF time per call goes against the
# hand-written floor, at 4 KiB psync (fio, 4 jobs, 4 s, /dev/shm).
#
# Each variant is the report's own generated C with one part taken out by
# clang-variant.sh (EBQ_CLANG wraps clang; a fresh EBQ_CACHE_DIR forces the
# compile): `full` as shipped, `noname` without the file name read at entry,
# stashed and copied into the row, `noname-noscope` without the `-c` scope
# lookup at entry too. VARIANTS picks others (default "full noname
# noname-noscope"): `nolock` without the fold's per-file lock, `nocommon`
# without its common access and stride tables, `noaccess` without its read
# and write branch (Open::add's: every counter of a read), `nofold` with the fold
# returning at once (the row is still built), and the others clang-variant.sh
# names (`nolookup`, `nokind`, ...). The variants are measurements,
# not reports (their records lack what was taken out). The floor is bench/reference/report_floor.bpf.c
# under bench's loader: build both once with `ebq bench report --quick --out DIR`
# and pass DIR/reference.
#
# Per run it prints fio's IOPS and, from bpf_stats (turned on here), the mean
# ns per run of the pair's entry and exit programs: `ebq_pair_start` and
# `ebq_query` for the report, `enter` and `leave` for the floor.
#
# Usage: bench/issue39/report_parts.sh REFERENCE_DIR [ROUNDS]
set -euo pipefail
ref=${1:?usage: report_parts.sh REFERENCE_DIR [ROUNDS]}
rounds=${2:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ebq=$(cd "$here/../.." && pwd)/target/release/ebq
work=$(mktemp -d)
trap 'rm -rf "$work" /dev/shm/ebq-issue39' EXIT
mkdir -p /dev/shm/ebq-issue39
sysctl -qw kernel.bpf_stats_enabled=1

# fio, then a snapshot of every program's run time (the report's programs are
# still attached: this is the command ebq runs).
cat >"$work/fio.sh" <<FIO
fio --name=ebqbench --directory=/dev/shm/ebq-issue39 --rw=randread --bs=4k --ioengine=psync \
  --size=64M --numjobs=4 --time_based --runtime=4000ms --group_reporting \
  --clocksource=clock_gettime --output-format=json >"$work/fio-\$1.json"
bpftool prog show >"$work/progs-\$1.txt"
FIO

iops() { python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['jobs'][0]['read']['iops']))" "$1"; }
ns() { grep -E "name $2 " "$1" | awk '{ printf "%.1f", $(NF-2) / $NF }'; }

report() {
    local v=$1 tag=$1-$2
    VARIANT=$v EBQ_CACHE_DIR="$work/cache-$tag" EBQ_CLANG="$here/clang-variant.sh" \
        "$ebq" report io --format json -c "bash $work/fio.sh $tag" >/dev/null 2>"$work/report-$tag.err" ||
        { cat "$work/report-$tag.err" >&2; exit 1; }
    echo "$v: IOPS $(iops "$work/fio-$tag.json"), entry $(ns "$work/progs-$tag.txt" ebq_pair_start) ns, exit $(ns "$work/progs-$tag.txt" ebq_query) ns"
}

floor() {
    local tag=floor-$1
    "$ref/loader" "$ref/report_floor.bpf.o" /dev/null 2>"$work/floor.err" &
    local pid=$!
    for _ in $(seq 1 100); do grep -q attached "$work/floor.err" && break; sleep 0.1; done
    bash "$work/fio.sh" "$tag"
    kill -INT "$pid"
    wait "$pid" || true
    echo "floor: IOPS $(iops "$work/fio-$tag.json"), entry $(ns "$work/progs-$tag.txt" enter) ns, exit $(ns "$work/progs-$tag.txt" leave) ns"
}

bash "$work/fio.sh" layout >/dev/null # lays the files out once
for r in $(seq 1 "$rounds"); do
    echo "round $r"
    for v in ${VARIANTS:-full noname noname-noscope}; do
        report "$v" "$r"
    done
    floor "$r"
done
