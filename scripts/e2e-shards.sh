#!/usr/bin/env bash
# The end-to-end suite in shards: EBQ_E2E_SHARDS processes at once (default
# 3), each running its share of the modules one test at a time (issue 35 item
# 5). Run serially the suite keeps this 2-core machine 62 % busy (853 s wall,
# 533 s of CPU): most of a test is waiting for a workload, a window or a
# broker, so three processes at once finish in about a third of the time.
#
# Why processes, not `--test-threads=3` in one: a module's tests share
# fixed names (scratch directories named by the process id, comm names of
# their workloads), so a module must not run beside itself. Each shard is its
# own process and runs every test of a module, one after another, as the
# serial suite does. Modules are spread by the seconds each took alone
# (scripts/e2e-seconds.tsv), longest first, each onto the least loaded shard.
#
# Every shard's log is printed when all are done; the exit status is the
# first failing shard's. Run after the build (scripts/setup.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

shards=${EBQ_E2E_SHARDS:-3}
# --workspace, as the build: `-p ebq-e2e` resolves other features and recompiles the suite.
exe=$(cargo test --release --workspace --test e2e --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[[ -x $exe ]] || { echo "e2e-shards: no e2e test binary found (build first)" >&2; exit 1; }
exe=$(realpath "$exe")

work=target/e2e-shards
rm -rf "$work"
mkdir -p "$work"
# Every test, by its full name ("module::test: test"); ignored ones are listed
# too and stay ignored when named.
(cd crates/ebq-e2e && "$exe" --list --format terse) | sed -n 's/: test$//p' >"$work/tests"

python3 - "$shards" "$work" scripts/e2e-seconds.tsv <<'EOF'
import sys, collections
shards, work, seconds_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tests = [t for t in open(f"{work}/tests").read().split("\n") if t]
by_module = collections.defaultdict(list)
for t in tests:
    by_module[t.split("::")[0]].append(t)
# Groups: the modules joined in one line of the seconds file share a shard.
groups, seconds = {}, {}
for line in open(seconds_file):
    if line.startswith("#") or not line.strip():
        continue
    names, s = line.split("\t")
    for m in names.split(","):
        groups[m] = names
    seconds[names] = int(s)
units = collections.defaultdict(list)
for m in sorted(by_module):
    units[groups.get(m, m)] += by_module[m]
load, plan = [0] * shards, [[] for _ in range(shards)]
for unit in sorted(units, key=lambda u: (-seconds.get(u, 10), u)):
    i = load.index(min(load))
    load[i] += seconds.get(unit, 10)
    plan[i] += units[unit]
for i, names in enumerate(plan):
    open(f"{work}/shard{i}", "w").write("".join(n + "\n" for n in names))
    print(f"e2e-shards: shard {i}: {len(names)} tests, about {load[i]} s alone")
EOF

pids=()
for ((i = 0; i < shards; i++)); do
    mapfile -t names <"$work/shard$i"
    [[ ${#names[@]} -gt 0 ]] || continue
    (
        start=$SECONDS
        status=0
        cd crates/ebq-e2e
        "$exe" --exact --test-threads=1 "${names[@]}" || status=$?
        echo "e2e-shards: shard $i exited $status after $((SECONDS - start)) s"
        exit "$status"
    ) >"$work/shard$i.log" 2>&1 &
    pids+=("$i:$!")
done

failed=0
for entry in "${pids[@]}"; do
    i=${entry%%:*}
    status=0
    wait "${entry#*:}" || status=$?
    echo "== e2e shard $i"
    cat "$work/shard$i.log"
    [[ $status == 0 || $failed != 0 ]] || failed=$status
done
grep -h '^e2e-shards: shard' "$work"/shard*.log
exit "$failed"
