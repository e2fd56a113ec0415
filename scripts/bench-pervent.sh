#!/usr/bin/env bash
# Per-event cost of a COUNT(*) GROUP BY pid query: ebq vs bpftrace (Brendan Gregg's method).
#
#   scripts/bench-pervent.sh [COUNT] [RUNS]        (defaults: 2000000 5; needs root)
#
# Workload: `taskset -c 0 dd if=/dev/zero of=/dev/null bs=1 count=COUNT`, i.e. COUNT read(2)
# calls (plus dd's few start-up reads) on CPU 0. Each tracer runs system-wide in the
# background with its user-space process pinned to CPU 1, probing syscalls:sys_enter_read.
#
#   per-event cost = (T_traced - T_control) / events
#
# T is dd's wall-clock time (date +%s%N around fork/exec/wait), the fastest of RUNS runs after
# one untimed warm-up run; events is the count the tracer reported for dd's pid (checked to be
# COUNT + a few). The control (no tracer) is run first and again last; T_control is the
# fastest of both sets, so slow drift of the machine does not make tracing look cheaper.
#
# Environment: EBQ (path to the ebq binary, default target/release/ebq), BPFTRACE (default
# bpftrace), KEEP=1 keeps the temporary directory with raw timings and tracer output.
set -euo pipefail

COUNT=${1:-2000000}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EBQ=${EBQ:-$ROOT/target/release/ebq}
BPFTRACE=${BPFTRACE:-bpftrace}

die() { echo "bench-pervent: $*" >&2; exit 1; }
[[ $COUNT =~ ^[0-9]+$ && $COUNT -gt 0 ]] || die "COUNT must be a positive integer"
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer"
[[ $(id -u) -eq 0 ]] || die "must run as root"
for t in taskset dd bpftool "$BPFTRACE"; do
	command -v "$t" >/dev/null || die "$t not found"
done
[[ -x $EBQ ]] || die "$EBQ not found; run: cargo build --release --workspace"
[[ $(nproc) -ge 2 ]] || die "needs at least 2 CPUs (dd on CPU 0, tracer on CPU 1)"

TMP=$(mktemp -d /tmp/bench-pervent.XXXXXX)
TRACER_PID=

cleanup() {
	if [[ -n $TRACER_PID ]] && kill -0 "$TRACER_PID" 2>/dev/null; then
		kill -INT "$TRACER_PID" 2>/dev/null || true
		sleep 2
		kill -KILL "$TRACER_PID" 2>/dev/null || true
	fi
	if [[ ${KEEP:-0} == 1 ]]; then
		echo "bench-pervent: raw data kept in $TMP" >&2
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Other programs on sys_enter_read (e.g. someone else's tracer) would skew the numbers.
foreign_probes() {
	bpftool perf show 2>/dev/null | awk -v me="${TRACER_PID:-none}" \
		'/sys_enter_read$/ && $2 != me { n++ } END { print n + 0 }'
}

# One dd run; appends "elapsed_ns pid" to $1.
run_dd() {
	local out=$1 t0 t1 pid
	t0=$(date +%s%N)
	taskset -c 0 dd if=/dev/zero of=/dev/null bs=1 count="$COUNT" 2>/dev/null &
	pid=$!
	wait "$pid"
	t1=$(date +%s%N)
	echo "$((t1 - t0)) $pid" >>"$out"
}

# measure NAME: one warm-up run (pid kept for the count check) then RUNS timed runs.
measure() {
	local name=$1 i
	: >"$TMP/$name.times"
	run_dd "$TMP/$name.warmup"
	for ((i = 0; i < RUNS; i++)); do
		run_dd "$TMP/$name.times"
	done
	local f
	f=$(foreign_probes)
	[[ $f -eq 0 ]] || echo "bench-pervent: warning: $f other program(s) attached to sys_enter_read during '$name'" >&2
}

# start_tracer NAME CMD...: start pinned to CPU 1, wait until its program is attached.
start_tracer() {
	local name=$1 i
	shift
	taskset -c 1 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	TRACER_PID=$!
	for ((i = 0; i < 300; i++)); do
		if bpftool perf show 2>/dev/null | grep -Eq "^pid $TRACER_PID .*sys_enter_read$"; then
			sleep 0.5	# let any start-up work on CPU 1 settle
			return 0
		fi
		kill -0 "$TRACER_PID" 2>/dev/null || { cat "$TMP/$name.err" >&2; die "$name exited before attaching"; }
		sleep 0.1
	done
	die "$name did not attach within 30 s"
}

stop_tracer() {
	local i
	kill -INT "$TRACER_PID"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$TRACER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$TRACER_PID" 2>/dev/null; then
		kill -KILL "$TRACER_PID" 2>/dev/null || true
		die "tracer $TRACER_PID did not exit on SIGINT"
	fi
	wait "$TRACER_PID" 2>/dev/null || true
	TRACER_PID=
}

# counts NAME TOOL: "pid count" for every pid the tracer reported.
counts() {
	case $2 in
	ebq) # --format json: {"COUNT(*)":N,"pid":P,...}
		awk '{
			if (match($0, /"pid":[0-9]+/)) p = substr($0, RSTART + 6, RLENGTH - 6); else next
			if (match($0, /"COUNT\(\*\)":[0-9]+/)) print p, substr($0, RSTART + 11, RLENGTH - 11)
		}' "$TMP/$1.out" ;;
	bpftrace) # @[P]: N
		sed -nE 's/^@\[([0-9]+)\]: ([0-9]+)$/\1 \2/p' "$TMP/$1.out" ;;
	esac
}

# check NAME TOOL: every dd pid (warm-up and timed) must have COUNT..COUNT+100 events.
# Prints the smallest per-run count (the events divisor).
check() {
	local name=$1 tool=$2
	counts "$name" "$tool" >"$TMP/$name.counts"
	cat "$TMP/$name.warmup" "$TMP/$name.times" | awk -v count="$COUNT" -v name="$name" '
		NR == FNR { n[$1] = $2; next }
		{
			c = ($2 in n) ? n[$2] : 0
			if (c < count || c > count + 100) {
				printf "bench-pervent: %s: dd pid %s has %d events, expected %d..%d\n",
					name, $2, c, count, count + 100 > "/dev/stderr"
				bad = 1
			}
			if (min == "" || c < min) min = c
		}
		END { print min; exit bad }' "$TMP/$name.counts" -
}

fastest() { sort -n "$TMP/$1.times" | head -1 | cut -d' ' -f1; }

SQL_ALL="SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid"
SQL_DD="SELECT pid, COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'dd' GROUP BY pid"
BT_ALL='tracepoint:syscalls:sys_enter_read { @[pid] = count(); }'
BT_DD='tracepoint:syscalls:sys_enter_read /comm == "dd"/ { @[pid] = count(); }'

f=$(foreign_probes)
[[ $f -eq 0 ]] || echo "bench-pervent: warning: $f other program(s) already attached to sys_enter_read" >&2

echo "bench-pervent: COUNT=$COUNT RUNS=$RUNS; control" >&2
measure control1

declare -A EVENTS
for cfg in ebq:all ebq:dd bpftrace:all bpftrace:dd; do
	tool=${cfg%%:*} variant=${cfg#*:} name=${cfg/:/-}
	echo "bench-pervent: $tool ($variant)" >&2
	if [[ $tool == ebq ]]; then
		sql=$SQL_ALL
		[[ $variant == dd ]] && sql=$SQL_DD
		start_tracer "$name" "$EBQ" "$sql" --duration 600 --format json
	else
		prog=$BT_ALL
		[[ $variant == dd ]] && prog=$BT_DD
		start_tracer "$name" "$BPFTRACE" -e "$prog"
	fi
	measure "$name"
	stop_tracer
	EVENTS[$name]=$(check "$name" "$tool") || die "$name: wrong event counts (raw output: KEEP=1)"
done

echo "bench-pervent: control" >&2
measure control2
cat "$TMP/control1.times" "$TMP/control2.times" >"$TMP/control.times"

T_CONTROL=$(fastest control)
ns_per_event() { echo $((($(fastest "$1") - T_CONTROL) / ${EVENTS[$1]})); }
secs() { awk -v ns="$1" 'BEGIN { printf "%.4f", ns / 1e9 }'; }

echo
echo "dd bs=1 count=$COUNT on CPU 0, tracer on CPU 1; fastest of $RUNS runs (control: of $((2 * RUNS)), before and after)"
echo
echo "| tool | variant | fastest T (s) | events/run | per-event (ns) | ebq/bpftrace |"
echo "|---|---|---:|---:|---:|---:|"
echo "| none | control | $(secs "$T_CONTROL") | - | - | - |"
for variant in all dd; do
	label="COUNT(*) GROUP BY pid"
	[[ $variant == dd ]] && label="... WHERE comm = 'dd'"
	e=$(ns_per_event "ebq-$variant")
	b=$(ns_per_event "bpftrace-$variant")
	ratio=$(awk -v e="$e" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", e / b; else print "n/a" }')
	echo "| ebq | $label | $(secs "$(fastest "ebq-$variant")") | ${EVENTS[ebq-$variant]} | $e | $ratio |"
	echo "| bpftrace | $label | $(secs "$(fastest "bpftrace-$variant")") | ${EVENTS[bpftrace-$variant]} | $b | |"
done
echo
echo "control runs (s): $(sort -n "$TMP/control1.times" | awk '{ printf "%.4f ", $1 / 1e9 }')/ $(sort -n "$TMP/control2.times" | awk '{ printf "%.4f ", $1 / 1e9 }')"
for n in ebq-all bpftrace-all ebq-dd bpftrace-dd; do
	echo "$n runs (s): $(sort -n "$TMP/$n.times" | awk '{ printf "%.4f ", $1 / 1e9 }')"
done
