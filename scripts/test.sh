#!/usr/bin/env bash
# Full check: setup (packages, mounts, release build through clippy-driver),
# rustfmt check, clippy's and rustc's warnings as errors, the library's unit tests with the host hidden
# (scripts/test-pure.sh), then the test suite run serially (tests load real
# BPF programs). Extra arguments are passed to the test binaries, e.g.
# `scripts/test.sh some_test_name`.
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

phase "cargo test"
# Older kernels charge BPF maps against RLIMIT_MEMLOCK; lift it when allowed.
ulimit -l unlimited 2>/dev/null || true
# --no-fail-fast: a red binary does not hide the others' results.
cargo test --release --workspace --no-fail-fast -- --test-threads=1 "$@"

if [[ $# -eq 0 ]]; then
    phase "soak (60 s)"
    SOAK_SECONDS=60 bash scripts/soak.sh
fi
phase "done"
