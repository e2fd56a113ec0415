#!/usr/bin/env bash
# Soak (issue 7): an aggregate and a streaming ebq query run side by side for
# SOAK_SECONDS (default 3600; CI uses 60) while `dd bs=1` on both CPUs issues
# read syscalls as fast as the machine allows. Checks:
#   * counts are exact: the aggregate's COUNT equals the dd reads issued
#     (every dd runs `count=SOAK_CHUNK`, so the total is known), and the stream's
#     delivered + dropped == matched == that total, and its output has exactly
#     `delivered` rows;
#   * RSS is flat: for each ebq, VmRSS (sampled every SOAK_SAMPLE seconds from
#     /proc/PID/status) in the last quarter never exceeds the first quarter's
#     maximum by more than SOAK_RSS_SLACK_KB (default 4096 KiB); for the stream,
#     whose writer's bounded queue (64 MiB) may fill while the CPUs are shared,
#     by more than that bound plus the slack (whether it was still rising at the
#     end is printed: a queue that fills slowly can take minutes).
# Prints the measured event rate (dd reads per second) and, per query, the RSS
# min/median/max of each quarter. Exit 0 when every check passes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

SECONDS_TOTAL=${SOAK_SECONDS:-3600}
SAMPLE=${SOAK_SAMPLE:-$(( SECONDS_TOTAL >= 600 ? 5 : 1 ))}
CHUNK=${SOAK_CHUNK:-2000000}
SLACK_KB=${SOAK_RSS_SLACK_KB:-4096}
# The bound of the stream writer's queue, QueuedSink::DEFAULT_BYTES (64 MiB), in KiB.
QUEUE_KB=65536
# What a full queue holds in RSS: the bound counts Arrow buffers' capacity, and
# the allocator keeps more (the reader thread allocates each batch, the writer
# frees it, in another arena). Full queues measured 95-106 MiB over the
# stream's start (fresh-clone soaks: 19.5 MiB at start, 117-125 MiB full), so
# a full queue may hold twice its bound in RSS.
QUEUE_RSS_KB=$(( 2 * QUEUE_KB ))
# The stream's ring buffer: small enough that the reader wakes rarely (every
# 50 ms or when full) and rows beyond it are dropped in the kernel (and
# counted), so the reader does not take a CPU away from the load.
RING=${SOAK_RINGBUF:-262144}
EBQ=${EBQ:-target/release/ebq}
[[ -x $EBQ ]] || cargo build --quiet --release -p ebq-cli

dir=$(mktemp -d /tmp/ebq-soak.XXXXXX)
# A private copy so that the comm names only this script's dd processes.
cp "$(command -v dd)" "$dir/ebqsoak-dd"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

where="WHERE comm = 'ebqsoak-dd' AND fd = 0"
"$EBQ" --format json "SELECT COUNT(*) AS n FROM syscalls.sys_enter_read $where" \
    >"$dir/agg.out" 2>"$dir/agg.err" &
agg=$!
pids+=("$agg")
"$EBQ" --ringbuf-size "$RING" --wakeup-bytes "$RING" --format json "SELECT pid, count FROM syscalls.sys_enter_read $where" \
    2>"$dir/rows.err" > >(wc -l >"$dir/rows.lines") &
rows=$!
pids+=("$rows")
# Both attached (each prints its banner once its programs are attached).
for f in agg rows; do
    for _ in $(seq 600); do grep -q "Ctrl-C" "$dir/$f.err" 2>/dev/null && break; sleep 0.1; done
    grep -q "Ctrl-C" "$dir/$f.err" || { cat "$dir/$f.err" >&2; echo "soak: ebq did not start" >&2; exit 1; }
done

start=$(date +%s.%N)
end=$(( $(date +%s) + SECONDS_TOTAL ))
for cpu in 0 1; do
    (
        n=0
        while (( $(date +%s) < end )); do
            taskset -c "$cpu" "$dir/ebqsoak-dd" if=/dev/zero of=/dev/null bs=1 count="$CHUNK" 2>/dev/null </dev/null
            n=$(( n + 1 ))
        done
        echo "$n" >"$dir/chunks.$cpu"
    ) &
    pids+=("$!")
done
loaders=("${pids[@]:2}")

: >"$dir/rss"
while kill -0 "${loaders[0]}" 2>/dev/null || kill -0 "${loaders[1]}" 2>/dev/null; do
    a=$(awk '/VmRSS/ {print $2}' "/proc/$agg/status")
    r=$(awk '/VmRSS/ {print $2}' "/proc/$rows/status")
    echo "$(date +%s.%N) $a $r" >>"$dir/rss"
    sleep "$SAMPLE"
done
wait "${loaders[@]}"
elapsed=$(echo "$(date +%s.%N) - $start" | bc)
kill -INT "$agg" "$rows"
wait "$agg" "$rows"
sleep 0.2 # let wc finish

expected=$(( ($(cat "$dir/chunks.0") + $(cat "$dir/chunks.1")) * CHUNK ))
rate=$(echo "$expected / $elapsed" | bc)
agg_n=$(tail -n 1 "$dir/agg.out" | sed -E 's/.*"n":([0-9]+).*/\1/')
read -r r_matched r_delivered r_dropped < <(grep "events seen" "$dir/rows.err" \
    | sed -E 's/.* ([0-9]+) matched, ([0-9]+) delivered, ([0-9]+) dropped.*/\1 \2 \3/')
lines=$(tr -d ' ' <"$dir/rows.lines")

echo "soak: ${SECONDS_TOTAL}s requested, ${elapsed}s run, $expected dd reads ($rate reads/s on 2 CPUs)"
(( rate >= 1000000 )) || echo "soak: note: below the 1 M reads/s target (the CPUs are shared: see uptime: $(uptime | sed 's/.*average: //'))"
echo "soak: aggregate COUNT = $agg_n; $(grep 'events seen' "$dir/agg.err" | sed 's/^ebq: //')"
echo "soak: stream: $(grep 'events seen' "$dir/rows.err" | sed 's/^ebq: //'); $lines rows written"

fail=0
check() { if eval "$1"; then echo "  ok: $2"; else echo "  FAIL: $2"; fail=1; fi; }
check "[[ $agg_n -eq $expected ]]" "aggregate COUNT ($agg_n) == dd reads ($expected)"
check "[[ $r_matched -eq $expected ]]" "stream matched ($r_matched) == dd reads ($expected)"
check "[[ $(( r_delivered + r_dropped )) -eq $r_matched ]]" "stream delivered + dropped ($r_delivered + $r_dropped) == matched"
check "[[ $lines -eq $r_delivered ]]" "stream rows written ($lines) == delivered"

# RSS per quarter: min/median/max; flat = last-quarter max <= first-quarter max + slack.
for col in 2 3; do
    name=$([[ $col == 2 ]] && echo aggregate || echo stream)
    summary=$(awk -v c="$col" '{print $c}' "$dir/rss" | python3 -c '
import sys
v = [int(x) for x in sys.stdin.read().split()]
q = max(1, len(v) // 4)
parts = [v[:q], v[q:2*q], v[2*q:3*q], v[3*q:]] if len(v) >= 4 else [v, v, v, v]
out = []
for p in parts:
    s = sorted(p)
    out.append("%d/%d/%d" % (s[0], s[len(s)//2], s[-1]))
print(" ".join(out), max(parts[0]), max(parts[2]), max(parts[3]), len(v))
')
    read -r q1 q2 q3 q4 first_max third_max last_max samples <<<"$summary"
    echo "soak: $name RSS KiB min/median/max per quarter ($samples samples): $q1 | $q2 | $q3 | $q4"
    if [[ $name == aggregate ]]; then
        check "[[ $last_max -le $(( first_max + SLACK_KB )) ]]" \
            "$name RSS flat (last-quarter max $last_max <= first-quarter max $first_max + $SLACK_KB)"
    else
        # The stream's writer thread sits behind a queue of up to QUEUE_KB of decoded batches
        # (QueuedSink::DEFAULT_BYTES): when the CPUs are shared and the writer falls behind,
        # the queue fills, in seconds or in minutes, and RSS rises by up to QUEUE_RSS_KB, then
        # stays. A leak is growth beyond the bound, or growth that goes on to the end. (With
        # the queue itself as the bound, a queue that filled after the first quarter failed:
        # 101,636 KiB against 29,652 + 65,536 + 4,096, a fresh-clone run at 892ef95.)
        check "[[ $last_max -le $(( first_max + QUEUE_RSS_KB + SLACK_KB )) ]]" \
            "$name RSS bounded (last-quarter max $last_max <= first-quarter max $first_max + full queue $QUEUE_RSS_KB + $SLACK_KB)"
        # Whether it still grew at the end is printed, not checked: when the writer falls
        # only a little behind, the queue fills for minutes, and in a 60 s soak beside
        # other work RSS rose 111 -> 125 MiB, third quarter to fourth, well under the
        # bound (a fresh-clone run at 01da34f, the CPUs shared with two builds). A leak
        # goes past the bound: the check above, over an hour in the long soak.
        if [[ $last_max -le $(( third_max + SLACK_KB )) ]]; then
            echo "  $name RSS flat at the end (last-quarter max $last_max <= third-quarter max $third_max + $SLACK_KB)"
        else
            echo "  $name RSS still rising at the end, under the bound: the queue filling (last-quarter max $last_max, third-quarter max $third_max)"
        fi
    fi
done
exit "$fail"
