#!/usr/bin/env bash
# The live demo: system calls per process, one table per second, for 5 seconds.
# Runs setup first (packages, tracefs, release build). Extra arguments go to ebq.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"
bash scripts/setup.sh
echo
echo "ebq: system calls per process, 1 s windows, 5 s (a dd in the background makes some load)"
(dd if=/dev/zero of=/dev/null bs=4k count=200000 status=none; sleep 1; dd if=/dev/zero of=/dev/null bs=512 count=300000 status=none) &
exec ./target/release/ebq --duration 5 "$@" \
  "SELECT comm, COUNT(*) AS syscalls FROM raw_syscalls.sys_enter GROUP BY comm WINDOW(time, 1000, 1000)"
