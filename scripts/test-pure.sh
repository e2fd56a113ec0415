#!/usr/bin/env bash
# The library's unit tests with the host hidden: before runtime everything is
# pure (the KernelInfo seam), so the libraries' unit tests must pass in a
# private mount namespace where tracefs, debugfs, /sys/kernel/btf,
# /proc/kallsyms and the UAPI asm headers are covered by empty mounts.
# Needs root (unshare -m). Extra arguments are passed to the test binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

if [[ ${1:-} != --inside ]]; then
    # Build with the host visible (libbpf-sys compiles C against the headers),
    # then run the already-built tests with it hidden. As `--workspace`: with
    # `-p ebq` cargo resolves other dependency features, and scripts/test.sh's
    # `cargo test --workspace` then built parquet, object and ebq a second time.
    cargo test --release --workspace --lib --no-run
    exec unshare -m --propagation private bash "${BASH_SOURCE[0]}" --inside "$@"
fi
shift

hidden=()
for dir in /sys/kernel/tracing /sys/kernel/debug /sys/kernel/btf /usr/include/asm /usr/include/x86_64-linux-gnu/asm; do
    if [[ -d $dir ]]; then
        mount -t tmpfs -o ro,size=4k ebq-hidden "$dir"
        hidden+=("$dir")
    fi
done
mount --bind /dev/null /proc/kallsyms
hidden+=(/proc/kallsyms)
echo "== cargo test --workspace --lib, hidden: ${hidden[*]}"
cargo test --release --workspace --lib -- "$@"
