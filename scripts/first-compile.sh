#!/bin/bash
# First-compile cost of each shipped query (issue 16 item 5), as root:
#   cold:  an empty cache directory (CO-RE queries also build vmlinux.h and its PCH),
#   miss:  the PCH present, the object not cached (what --no-cache costs),
#   hit:   the object cached (no clang).
# Each figure is the median of RUNS `ebq compile` wall times, in ms.
# Usage: scripts/first-compile.sh [EBQ] [RUNS]
set -euo pipefail
ebq=${1:-target/release/ebq}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ms() { local t0 t1; t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N); echo $(((t1 - t0) / 1000000)); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
printf '| query | file columns | cold ms | miss ms | hit ms |\n|---|---|---:|---:|---:|\n'
for name in $("$ebq" queries | awk 'NF && $1 != "run" {print $1}'); do
    text=$("$ebq" queries "$name")
    sql=$(printf '%s\n' "$text" | grep -v '^--' | grep -v '^parameter ')
    while read -r p v; do sql=${sql//\{$p\}/$v}; done < <(printf '%s\n' "$text" | sed -n 's/^-- param: \([a-z_]*\) = \([^ ]*\).*/\1 \2/p')
    core=no; grep -q '#include "vmlinux.h"' < <("$ebq" explain "$sql" 2>/dev/null) && core=yes
    cold=(); miss=(); hit=()
    for _ in $(seq "$runs"); do
        rm -rf "$work/cache"; mkdir -m 700 "$work/cache"
        cold+=("$(EBQ_CACHE_DIR=$work/cache ms "$ebq" compile "$sql" -o "$work/q.ebq")")
        rm -rf "$work/cache/objects"
        miss+=("$(EBQ_CACHE_DIR=$work/cache ms "$ebq" compile "$sql" -o "$work/q.ebq")")
        hit+=("$(EBQ_CACHE_DIR=$work/cache ms "$ebq" compile "$sql" -o "$work/q.ebq")")
    done
    printf '| %s | %s | %s | %s | %s |\n' "$name" "$core" \
        "$(printf '%s\n' "${cold[@]}" | median)" "$(printf '%s\n' "${miss[@]}" | median)" "$(printf '%s\n' "${hit[@]}" | median)"
done
