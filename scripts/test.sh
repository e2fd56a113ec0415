#!/usr/bin/env bash
# Full check: setup (packages, mounts, release build through clippy-driver),
# rustfmt check, clippy's and rustc's warnings as errors, the library's unit tests with the host hidden
# (scripts/test-pure.sh), then the test suite (tests load real BPF programs):
# every binary but the end-to-end suite one test at a time, the end-to-end
# suite in shards of modules run side by side (scripts/e2e-shards.sh), and a
# 60 s soak. Extra arguments are passed to every test binary instead, one test
# at a time and without the soak, e.g. `scripts/test.sh some_test_name`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

# Each phase's start is stamped with the seconds since this script began, so a
# run's log shows where its time went (setup, build, each test binary, soak).
phase() { echo "== $* (at ${SECONDS} s)"; }

EBQ_SETUP_ALL_TARGETS=1 bash scripts/setup.sh

if ! cargo fmt --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 && rustup component add rustfmt >/dev/null 2>&1 || true
    cargo fmt --version >/dev/null 2>&1 || {
        echo "test: error: 'cargo fmt' is not available (rustup component add rustfmt)" >&2
        exit 1
    }
fi

phase "cargo fmt --check"
cargo fmt --all -- --check

# Setup's build ran every workspace crate through clippy-driver (.cargo/config.toml),
# so clippy's lints were checked as it compiled: asking cargo again replays each
# crate's diagnostics from its cache without compiling anything. A crate with a
# warning, clippy's or rustc's, fails the run (as `cargo clippy -- -D warnings` would).
phase "lints (clippy and rustc warnings are errors)"
lint_log=$(cargo build --release --workspace --all-targets --message-format short 2>&1) || {
    printf '%s\n' "$lint_log" >&2
    exit 1
}
if grep -E '^warning: `[^`]+` \(.*\) generated [0-9]+ warnings?' <<<"$lint_log" >/dev/null; then
    printf '%s\n' "$lint_log" >&2
    echo "test: error: the warnings above are errors" >&2
    exit 1
fi

phase "pure unit tests (tracefs, BTF, kallsyms and asm headers hidden)"
bash scripts/test-pure.sh

# Older kernels charge BPF maps against RLIMIT_MEMLOCK; lift it when allowed.
ulimit -l unlimited 2>/dev/null || true
if [[ $# -gt 0 ]]; then
    phase "cargo test $*"
    # A filter: every test binary, one test at a time.
    cargo test --release --workspace --no-fail-fast -- --test-threads=1 "$@"
    phase "done"
    exit 0
fi

phase "cargo test (every binary but the end-to-end suite)"
# --no-fail-fast: a red binary does not hide the others' results; nor does it
# hide the end-to-end suite's.
status=0
cargo test --release --workspace --no-fail-fast --exclude ebq-e2e -- --test-threads=1 || status=$?
# The workload binary's own unit tests (with --workspace, as the build resolved features).
cargo test --release --workspace --bin ebq-workload -- --test-threads=1 || status=$?

phase "end-to-end suite (${EBQ_E2E_SHARDS:-3} shards at once, each one test at a time)"
bash scripts/e2e-shards.sh || status=$?
[[ $status == 0 ]] || exit "$status"

phase "soak (60 s)"
SOAK_SECONDS=60 bash scripts/soak.sh
phase "done"
