#!/usr/bin/env bash
# The fleet sinks against real receivers (issue 38): a real OpenTelemetry
# Collector, built here with the collector's official builder from Go
# modules (crates/ebq-e2e/otelcol/builder.yaml: OTLP receiver, file exporter),
# gets ebq's rows over `--sink otlp+http://…` and the e2e test
# otlp_logs::a_real_collector_writes_every_row compares what its file
# exporter wrote with the workload's own tally; then the Kafka e2e module
# runs against a real Apache Kafka broker (scripts/setup.sh fetched it).
#
# Needs Go >= 1.24 on PATH (the builder's own requirement; Debian 12's
# golang is 1.19: install Go from go.dev) and the Go module proxy. Everything
# it downloads and builds stays in target/otelcol (GOPATH, GOCACHE, the
# builder, the collector): `rm -rf target/otelcol` starts over. Not in CI:
# the README says how long it takes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

BUILDER_VERSION=v0.165.0
out=$PWD/target/otelcol
started=$SECONDS

log() { echo "== $* ($((SECONDS - started)) s)"; }
die() { echo "test-fleet: $*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found: install Go >= 1.24 (go.dev/dl) for the collector's builder"
mkdir -p "$out"
export GOPATH=$out/gopath GOCACHE=$out/gocache GOFLAGS=-modcacherw GOTOOLCHAIN=local

if [[ ! -x $out/bin/builder ]]; then
    log "go install go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION"
    GOBIN=$out/bin go install "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION"
fi

# The manifest with its output under target/otelcol; rebuilt when it changed.
manifest=$out/manifest.yaml
sed "s|^dist:|dist:\n  output_path: $out/build|" crates/ebq-e2e/otelcol/builder.yaml >"$manifest.new"
if [[ ! -x $out/build/otelcol-ebq ]] || ! cmp -s "$manifest.new" "$manifest"; then
    log "builder --config=$manifest"
    mv "$manifest.new" "$manifest"
    "$out/bin/builder" --config="$manifest"
else
    rm "$manifest.new"
fi
export EBQ_OTELCOL=$out/build/otelcol-ebq
log "collector: $("$EBQ_OTELCOL" --version)"

log "cargo test otlp_logs::a_real_collector_writes_every_row (ignored in the suite)"
cargo test --release -p ebq-e2e --test e2e -- otlp_logs::a_real_collector_writes_every_row --ignored \
    --exact --test-threads=1 --nocapture

log "cargo test kafka::"
cargo test --release -p ebq-e2e --test e2e -- kafka:: --test-threads=1

log "test-fleet: all passed"
