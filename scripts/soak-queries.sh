#!/usr/bin/env bash
# Soak test: the generated-query property test (crates/ebq-e2e/tests/props.rs)
# with many more cases than CI runs (default 10,000, ~25-35 minutes), release
# build. Every generated query that binds must compile, load, attach, run and
# detach; a failure is shrunk to a minimal query and printed.
#
#   bash scripts/soak-queries.sh                 # 10,000 cases
#   EBQ_PROP_CASES=2000 bash scripts/soak-queries.sh
#   EBQ_PROP_SEED=123 bash scripts/soak-queries.sh   # replay a run
#   bash scripts/soak-queries.sh --all-events    # also load every event of the catalog (~20 min more)
#
# EBQ_PROP_AVOID=block-comment,... steers the generator around known bugs (see props.rs).
# Needs root, tracefs and clang, like the other end-to-end tests.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"
export EBQ_PROP_CASES="${EBQ_PROP_CASES:-10000}"

all_events=0
for arg in "$@"; do
    case "$arg" in
        --all-events) all_events=1 ;;
        *) echo "usage: $0 [--all-events]" >&2; exit 2 ;;
    esac
done

ulimit -l unlimited 2>/dev/null || true
cargo build --release --workspace --quiet

log="$(mktemp -t ebq-soak.XXXXXX)"
start=$(date +%s)
set +e
cargo test --release -p ebq-e2e --test e2e props::generated_queries -- --nocapture --test-threads=1 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [[ $rc -eq 0 && $all_events -eq 1 ]]; then
    cargo test --release -p ebq-e2e --test e2e props::every_event -- --ignored --nocapture --test-threads=1 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
fi
set -e
elapsed=$(( $(date +%s) - start ))

echo
echo "== soak summary"
grep -a -E '^props: [0-9]+ queries attached|^props: .*seed|^[0-9]+ events:' "$log" | sed 's/^/  /' || true
if [[ $rc -eq 0 ]]; then
    echo "  result: PASS, ${EBQ_PROP_CASES} cases, 0 failures, ${elapsed} s (log: $log)"
else
    echo "  result: FAIL (exit $rc), ${elapsed} s; the minimal failing query is in the log: $log"
    grep -a -A6 'minimal case:' "$log" | sed 's/^/  /' || true
fi
exit "$rc"
