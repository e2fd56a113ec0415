#!/usr/bin/env bash
# The test command (scripts/test.sh) with two other tracers attached the whole
# time, as on a machine where ebq is not the only BPF user:
#   - libbpf-tools' syscount (classic raw_syscalls tracepoint programs, per
#     process, latency on), and
#   - a bpftrace one-liner on tracepoint:raw_syscalls:sys_enter.
# Both are classic (perf-event) tracepoint programs: while one of them runs on a
# CPU, every other classic tracepoint program on that CPU is skipped and only its
# `recursion_misses` moves. ebq's tests must stay green beside them: a count is
# "exact or accounted" (counted + missed + open + superseded + dropped = truth),
# never "exact because nobody else was there". Arguments go to scripts/test.sh.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

bash scripts/setup.sh

logs=target/beside-tracers
mkdir -p "$logs"
pids=()
# SIGINT, then SIGKILL for a tracer still there after 10 s (bpftrace 0.17 was
# seen hanging at exit): the script's own end never waits on a tracer.
stop_tracers() {
    for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    for _ in $(seq 1 100); do
        alive=0
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        sleep 0.1
    done
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_tracers EXIT

syscount -P -L -i 30 >"$logs/syscount.log" 2>&1 &
pids+=($!)
bpftrace -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); } interval:s:30 { print(@, 5); clear(@); }' \
    >"$logs/bpftrace.log" 2>&1 &
pids+=($!)

# Both attached before the first test starts: each tracer holds a BPF program's fd.
holds_prog() { ls -l "/proc/$1/fd" 2>/dev/null | grep -q 'bpf-prog'; }
for _ in $(seq 1 300); do
    holds_prog "${pids[0]}" && holds_prog "${pids[1]}" && { sleep 1; break; }
    sleep 0.1
done
# Both tracers still running, or the run fails saying `when`.
tracers_alive() {
    for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null || {
            echo "test-beside-tracers: a tracer exited $1:" >&2
            cat "$logs"/*.log >&2
            exit 1
        }
    done
}
tracers_alive "before the tests started"
echo "test-beside-tracers: syscount (pid ${pids[0]}) and bpftrace (pid ${pids[1]}) attached; logs in $logs"

bash scripts/test.sh "$@"

# Still attached at the end: the suite ran beside them from first test to last.
tracers_alive "during the run"
echo "test-beside-tracers: green with syscount and bpftrace attached throughout"
