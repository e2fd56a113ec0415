#!/usr/bin/env bash
# Full check: setup (packages, mounts, release build), rustfmt check, clippy
# with warnings as errors, the library's unit tests with the host hidden
# (scripts/test-pure.sh), then the test suite run serially (tests load real
# BPF programs). Extra arguments are passed to the test binaries, e.g.
# `scripts/test.sh some_test_name`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

EBQ_SETUP_ALL_TARGETS=1 bash scripts/setup.sh

for tool in fmt clippy; do
    if ! cargo "$tool" --version >/dev/null 2>&1; then
        if command -v rustup >/dev/null 2>&1; then
            comp=$([[ $tool == fmt ]] && echo rustfmt || echo clippy)
            rustup component add "$comp" >/dev/null 2>&1 || true
        fi
        cargo "$tool" --version >/dev/null 2>&1 || {
            echo "test: error: 'cargo $tool' is not available" >&2
            exit 1
        }
    fi
done

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --quiet --release --workspace --all-targets -- -D warnings

echo "== pure unit tests (tracefs, BTF, kallsyms and asm headers hidden)"
bash scripts/test-pure.sh

echo "== cargo test"
# Older kernels charge BPF maps against RLIMIT_MEMLOCK; lift it when allowed.
ulimit -l unlimited 2>/dev/null || true
cargo test --release --workspace -- --test-threads=1 "$@"

if [[ $# -eq 0 ]]; then
    echo "== soak (60 s)"
    SOAK_SECONDS=60 bash scripts/soak.sh
fi
