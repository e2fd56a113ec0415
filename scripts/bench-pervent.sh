#!/usr/bin/env bash
# Per-event cost of a COUNT(*) GROUP BY pid query: ebq vs bpftrace (Brendan Gregg's method).
#
#   scripts/bench-pervent.sh [COUNT] [RUNS]        (defaults: 2000000 5; needs root)
#
# Workload: `taskset -c 0 dd if=/dev/zero of=/dev/null bs=1 count=COUNT`, i.e. COUNT read(2)
# calls (plus a few start-up reads) on CPU 0. Each tracer runs system-wide in the background
# with its user-space process pinned to CPU 1 (see DD_CPU, TRACER_CPU below), probing
# tracepoint syscalls:sys_enter_read:
#
#   ebq      "SELECT pid, COUNT(*) FROM syscalls.sys_enter_read [WHERE comm = 'dd'] GROUP BY pid"
#   bpftrace 'tracepoint:syscalls:sys_enter_read [/comm == "dd"/] { @[pid] = count(); }'
#
#   per-event cost = (T_traced - T_control) / events
#
# T is the fastest of RUNS clean runs (after one untimed warm-up run; see below) of
#   - elapsed: dd's wall-clock time, fork to reap (Gregg's method as such), and
#   - cpu:     dd's user + system CPU time (wait4 rusage); the BPF program runs in dd's
#              syscalls, so this is charged to dd too, but it does not grow when something
#              else shares dd's CPU, so it is less sensitive to a busy machine.
# events is the count the tracer itself reported for dd's pid, checked to be COUNT plus a
# few for every run. The control (no tracer) is measured first and again last, and
# T_control is the fastest of both sets, so drift cannot make tracing look cheaper.
#
# Before each phase the script waits (up to QUIET_WAIT s, default 300) for the machine to be
# idle. A run during which the tracer's CPU (which only holds the idle tracer) was >= 10%
# busy is "busy": something else was running (on the VM this was written on, that slows dd
# down even in CPU time). Busy runs are repeated (up to 3 x RUNS runs in all, waiting up to
# QUIET_WAIT_RUN s, default 60, for quiet after each) and left out if RUNS clean ones exist.
#
# ROUNDS=N (default 1) repeats the whole cycle (control, ebq, ebq WHERE, bpftrace, bpftrace
# WHERE) N times and takes the fastest run over all rounds: this VM's speed drifts by several
# percent over minutes, and interleaving keeps that drift from favouring one tool.
#
# DD_CPU (default 0) and TRACER_CPU (default 1) choose the CPUs. The CPU matters for bpftrace:
# it attaches its tracepoint through a perf event opened on CPU 0 only with sample_period=1,
# and its programs return 1, so on CPU 0 (only) every event also goes through perf's sample
# path (see bench/pervent-issue2.md).
#
# Environment: EBQ (ebq binary, default target/release/ebq), BPFTRACE (default bpftrace),
# ROUNDS, DD_CPU, TRACER_CPU, QUIET_WAIT, QUIET_WAIT_RUN, KEEP=1 (keep the temporary
# directory with raw timings and tracer output).
set -euo pipefail

COUNT=${1:-2000000}
RUNS=${2:-5}
ROUNDS=${ROUNDS:-1}
DD_CPU=${DD_CPU:-0}
TRACER_CPU=${TRACER_CPU:-1}
ROUND=1
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EBQ=${EBQ:-$ROOT/target/release/ebq}
BPFTRACE=${BPFTRACE:-bpftrace}

die() { echo "bench-pervent: $*" >&2; exit 1; }
[[ $COUNT =~ ^[0-9]+$ && $COUNT -gt 0 ]] || die "COUNT must be a positive integer"
[[ $RUNS =~ ^[0-9]+$ && $RUNS -gt 0 ]] || die "RUNS must be a positive integer"
[[ $ROUNDS =~ ^[0-9]+$ && $ROUNDS -gt 0 ]] || die "ROUNDS must be a positive integer"
[[ $(id -u) -eq 0 ]] || die "must run as root"
for t in taskset dd bpftool python3 "$BPFTRACE"; do
	command -v "$t" >/dev/null || die "$t not found"
done
[[ -x $EBQ ]] || die "$EBQ not found; run: cargo build --release --workspace"
[[ $DD_CPU =~ ^[0-9]+$ && $TRACER_CPU =~ ^[0-9]+$ && $DD_CPU != "$TRACER_CPU" ]] ||
	die "DD_CPU and TRACER_CPU must be two different CPU numbers"
[[ -d /sys/devices/system/cpu/cpu$DD_CPU && -d /sys/devices/system/cpu/cpu$TRACER_CPU ]] ||
	die "needs CPUs $DD_CPU and $TRACER_CPU (dd on DD_CPU, tracer on TRACER_CPU)"

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

# Programs of others on sys_enter_read would add their cost to every measurement.
foreign_probes() {
	bpftool perf show 2>/dev/null | awk -v me="${TRACER_PID:-none}" \
		'/sys_enter_read$/ && $2 != me { n++ } END { print n + 0 }'
}

# "busy total" jiffies of CPU $1, or of all CPUs without an argument.
jiffies() {
	awk -v cpu="cpu${1:-}" '$1 == cpu {
		print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat
}

# Waits up to QUIET_WAIT seconds for the machine to be idle (< 5% busy over 2 s).
wait_quiet() {
	local deadline=$((SECONDS + ${QUIET_WAIT:-300})) b0 t0 b1 t1 busy
	while :; do
		read -r b0 t0 < <(jiffies)
		sleep 2
		read -r b1 t1 < <(jiffies)
		busy=$((100 * (b1 - b0) / (t1 - t0 + 1)))
		((busy < 5)) && return 0
		if ((SECONDS >= deadline)); then
			echo "bench-pervent: warning: machine still ${busy}% busy; elapsed times will be noisy" >&2
			return 0
		fi
	done
}

# Runs dd once on CPU argv[2]: prints "elapsed_ns pid cpu_ns involuntary_context_switches".
DD_RUNNER='
import os, sys, time
argv = ["taskset", "-c", sys.argv[2], "dd", "if=/dev/zero", "of=/dev/null", "bs=1",
        "count=" + sys.argv[1], "status=none"]
t0 = time.perf_counter_ns()
pid = os.fork()
if pid == 0:
    os.execvp(argv[0], argv)
_, status, ru = os.wait4(pid, 0)
t1 = time.perf_counter_ns()
if status != 0:
    sys.exit("dd failed")
print(t1 - t0, pid, round((ru.ru_utime + ru.ru_stime) * 1e9), ru.ru_nivcsw)
'

# One dd run; appends "elapsed_ns pid cpu_ns nivcsw tracer_cpu_busy_percent" to $1.
run_dd() {
	local out=$1 b0 j0 b1 j1 r
	read -r b0 j0 < <(jiffies "$TRACER_CPU")
	r=$(python3 -c "$DD_RUNNER" "$COUNT" "$DD_CPU")
	read -r b1 j1 < <(jiffies "$TRACER_CPU")
	echo "$r $((100 * (b1 - b0) / (j1 - j0 + 1)))" >>"$out"
}

# measure NAME: one warm-up run (its pid is checked too), then timed runs until RUNS of them
# were clean (the tracer's CPU, which only holds the idle tracer, < 10% busy: nothing else competed for
# the core) or 3 x RUNS runs were made; after a busy run it waits for the machine to go idle.
# Appends to NAME.times, so rounds accumulate.
measure() {
	local name=$1 f clean=0 tries=0
	run_dd "$TMP/$name.warmup"
	while ((clean < RUNS && tries < 3 * RUNS)); do
		run_dd "$TMP/$name.times"
		tries=$((tries + 1))
		if (($(tail -1 "$TMP/$name.times" | cut -d' ' -f5) < 10)); then
			clean=$((clean + 1))
		else
			QUIET_WAIT=${QUIET_WAIT_RUN:-60} wait_quiet
		fi
	done
	f=$(foreign_probes)
	[[ $f -eq 0 ]] || echo "bench-pervent: warning: $f other program(s) attached to sys_enter_read during '$name'" >&2
	((clean == RUNS)) || echo "bench-pervent: warning: '$name': only $clean clean runs of $tries" >&2
}

# start_tracer NAME CMD...: start it pinned to TRACER_CPU, return once its program is attached.
start_tracer() {
	local name=$1 i
	shift
	taskset -c "$TRACER_CPU" "$@" >"$TMP/$name.r$ROUND.out" 2>"$TMP/$name.err" &
	TRACER_PID=$!
	for ((i = 0; i < 300; i++)); do
		if bpftool perf show 2>/dev/null | grep -Eq "^pid $TRACER_PID .*sys_enter_read$"; then
			sleep 0.5	# let the tracer's start-up work settle
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

# counts NAME TOOL: "pid count" for every group the tracer printed.
counts() {
	case $2 in
	ebq) # --format json: {"COUNT(*)":N,...,"pid":P,...}
		awk '{
			if (match($0, /"pid":[0-9]+/)) p = substr($0, RSTART + 6, RLENGTH - 6); else next
			if (match($0, /"COUNT\(\*\)":[0-9]+/)) print p, substr($0, RSTART + 11, RLENGTH - 11)
		}' "$TMP/$1".r*.out ;;
	bpftrace) # @[P]: N
		cat "$TMP/$1".r*.out | sed -nE 's/^@\[([0-9]+)\]: ([0-9]+)$/\1 \2/p' ;;
	esac
}

# check NAME TOOL: every dd pid (warm-up and timed) must have COUNT..COUNT+100 events (the
# pid also covers the forked runner and taskset before they exec dd). Prints the smallest.
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

# fastest NAME COLUMN: smallest value of COLUMN (1: elapsed, 3: cpu) over the clean timed
# runs, or over all of them if there are fewer than RUNS clean ones.
fastest() {
	awk -v c="$2" -v runs="$RUNS" '{ all[NR] = $c } $5 < 10 { clean[++n] = $c }
		END { if (n >= runs) for (i = 1; i <= n; i++) print clean[i]; else for (i = 1; i <= NR; i++) print all[i] }' \
		"$TMP/$1.times" | sort -n | head -1
}

SQL_ALL="SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid"
SQL_DD="SELECT pid, COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'dd' GROUP BY pid"
BT_ALL='tracepoint:syscalls:sys_enter_read { @[pid] = count(); }'
BT_DD='tracepoint:syscalls:sys_enter_read /comm == "dd"/ { @[pid] = count(); }'

f=$(foreign_probes)
[[ $f -eq 0 ]] || echo "bench-pervent: warning: $f other program(s) already attached to sys_enter_read" >&2

declare -A EVENTS
TOOLS="ebq:all ebq:dd bpftrace:all bpftrace:dd"
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
	wait_quiet
	echo "bench-pervent: COUNT=$COUNT RUNS=$RUNS round $ROUND/$ROUNDS: control" >&2
	measure control
	for cfg in $TOOLS; do
		tool=${cfg%%:*} variant=${cfg#*:} name=${cfg/:/-}
		wait_quiet
		echo "bench-pervent: round $ROUND/$ROUNDS: $tool ($variant)" >&2
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
	done
done
wait_quiet
echo "bench-pervent: control" >&2
measure control

for cfg in $TOOLS; do
	tool=${cfg%%:*} name=${cfg/:/-}
	EVENTS[$name]=$(check "$name" "$tool") || die "$name: wrong event counts (see raw output with KEEP=1)"
done

ELAPSED_CONTROL=$(fastest control 1)
CPU_CONTROL=$(fastest control 3)
# per_event NAME COLUMN CONTROL
per_event() { awk -v t="$(fastest "$1" "$2")" -v c="$3" -v n="${EVENTS[$1]}" 'BEGIN { printf "%.1f", (t - c) / n }'; }
secs() { awk -v ns="$1" 'BEGIN { printf "%.4f", ns / 1e9 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo
echo "dd bs=1 count=$COUNT on CPU $DD_CPU, tracer on CPU $TRACER_CPU; fastest clean run of $RUNS per tool and round, $ROUNDS round(s); control before every round and at the end"
echo
echo "| tool | query | events/run | fastest elapsed (s) | per-event, elapsed (ns) | ebq/bpftrace | fastest dd CPU (s) | per-event, CPU (ns) | ebq/bpftrace |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
echo "| none | control | - | $(secs "$ELAPSED_CONTROL") | - | - | $(secs "$CPU_CONTROL") | - | - |"
for variant in all dd; do
	label="COUNT(*) GROUP BY pid"
	[[ $variant == dd ]] && label="COUNT(*) WHERE comm = 'dd' GROUP BY pid"
	ee=$(per_event "ebq-$variant" 1 "$ELAPSED_CONTROL")
	be=$(per_event "bpftrace-$variant" 1 "$ELAPSED_CONTROL")
	ec=$(per_event "ebq-$variant" 3 "$CPU_CONTROL")
	bc=$(per_event "bpftrace-$variant" 3 "$CPU_CONTROL")
	echo "| ebq | $label | ${EVENTS[ebq-$variant]} | $(secs "$(fastest "ebq-$variant" 1)") | $ee | $(ratio "$ee" "$be") | $(secs "$(fastest "ebq-$variant" 3)") | $ec | $(ratio "$ec" "$bc") |"
	echo "| bpftrace | $label | ${EVENTS[bpftrace-$variant]} | $(secs "$(fastest "bpftrace-$variant" 1)") | $be | | $(secs "$(fastest "bpftrace-$variant" 3)") | $bc | |"
done
echo
echo "All timed runs, elapsed / dd CPU in s (sorted by elapsed; 'busy': CPU $TRACER_CPU >= 10% busy, not used when there are $RUNS clean runs):"
for n in control ebq-all bpftrace-all ebq-dd bpftrace-dd; do
	printf -- '- %s: %s\n' "$n" "$(sort -n "$TMP/$n.times" |
		awk '{ printf "%s%.4f/%.4f%s", (NR > 1 ? ", " : ""), $1 / 1e9, $3 / 1e9, ($5 >= 10 ? " (busy)" : "") }')"
done
