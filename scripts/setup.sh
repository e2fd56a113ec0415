#!/usr/bin/env bash
# Prepares a Debian machine to build, run and test ebq, then builds the
# workspace in release mode (target/release/ebq, target/release/ebq-workload).
#
# Idempotent: when every package is installed and the filesystems are mounted,
# it touches neither apt nor mounts and only runs an (incremental) cargo build.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

export PATH="${HOME:-/root}/.cargo/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:${PATH:-}"

log() { printf 'setup: %s\n' "$*" >&2; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

# Run privileged commands directly as root, else through sudo when present.
SUDO=()
if [[ ${EUID:-$(id -u)} -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=(sudo -n)
    else
        log "not root and no sudo: installs and mounts may fail"
    fi
fi

# --- Debian packages --------------------------------------------------------
PKGS=(clang llvm libbpf-dev libelf-dev zlib1g-dev bpftool pkg-config make gcc g++
    fio bpftrace hyperfine python3 python3-venv mount linux-libc-dev prometheus libbpf-tools
    chromium e2fsprogs mpich libmpich-dev openmpi-bin libopenmpi-dev openssl curl systemtap-sdt-dev
    postgresql-15 bc librdkafka-dev default-jre-headless maven)
# Commands that must be callable once the packages are in.
CMDS=(clang llc bpftool pkg-config make gcc g++ fio bpftrace hyperfine python3 losetup prometheus
    chromium mkfs.ext4 mpicc.mpich mpirun.mpich mpicc.openmpi mpirun.openmpi openssl curl bc java mvn)

missing=()
for p in "${PKGS[@]}"; do
    if ! dpkg -s "$p" 2>/dev/null | grep '^Status: install ok installed' >/dev/null; then
        missing+=("$p")
    fi
done
for c in "${CMDS[@]}"; do
    if ! command -v "$c" >/dev/null 2>&1; then
        log "command '$c' not found"
        # Reinstalling everything is cheap and covers whichever package owns it.
        [[ ${#missing[@]} -gt 0 ]] || missing=("${PKGS[@]}")
    fi
done

apt_updated=0
apt_update() {
    if [[ $apt_updated -eq 0 ]]; then
        log "apt-get update"
        "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get -o DPkg::Lock::Timeout=600 update -qq </dev/null >/dev/null
        apt_updated=1
    fi
}
apt_install() {
    apt_update
    log "apt-get install $*"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "$@" \
        </dev/null >/dev/null
}

if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "${missing[@]}"
    for c in "${CMDS[@]}"; do
        command -v "$c" >/dev/null 2>&1 || die "command '$c' still missing after apt-get install"
    done
    # The serve tests start their own prometheus on a free loopback port: the
    # packaged service (started by postinst where systemd runs) is not wanted.
    if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null 2>&1; then
        "${SUDO[@]}" systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
fi

# --- Rust toolchain ---------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1; then
    log "cargo not found; trying Debian's rustup package"
    apt_update
    if apt-cache policy rustup 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
        apt_install rustup ca-certificates
        rustup default stable >/dev/null ||
            die "rustup is installed but 'rustup default stable' failed (no toolchain download?)"
        rustup component add rustfmt clippy >/dev/null || true
    fi
    command -v cargo >/dev/null 2>&1 ||
        die "cargo not found: install a Rust toolchain (rustup) so that ~/.cargo/bin/cargo exists"
fi

# Workspace crates build through clippy-driver (.cargo/config.toml): lints
# are checked while compiling, so no second pass over the dependencies.
if ! clippy-driver --version >/dev/null 2>&1; then
    command -v rustup >/dev/null 2>&1 && rustup component add clippy >/dev/null 2>&1 || true
    clippy-driver --version >/dev/null 2>&1 ||
        die "clippy-driver not found: workspace crates build through it (.cargo/config.toml); run 'rustup component add clippy'"
fi

# --- Kernel filesystems -----------------------------------------------------
is_mounted() { awk -v m="$1" '$2 == m { found = 1 } END { exit !found }' /proc/mounts; }

if ! is_mounted /sys/kernel/tracing; then
    log "mounting tracefs at /sys/kernel/tracing"
    "${SUDO[@]}" mount -t tracefs nodev /sys/kernel/tracing ||
        log "warning: could not mount tracefs; tracepoint tests will fail"
fi
if ! is_mounted /sys/fs/bpf; then
    log "mounting bpffs at /sys/fs/bpf"
    "${SUDO[@]}" mount -t bpf bpf /sys/fs/bpf ||
        log "warning: could not mount bpffs at /sys/fs/bpf"
fi

# The test packages (Maven's Kafka jars, the Python decoders) are fetched while
# cargo builds: both wait on the network more than on the CPUs, and the cold
# build is most of a fresh machine's test run (issue 35 item 5).
fetch_test_packages() {
    # --- Apache Kafka for the kafka:: tests (Maven Central, in target/kafka-jars) --
    # The broker, its tools and log4j (crates/ebq-e2e/kafka/pom.xml: 92 jars,
    # 54 MB); the tests fetch them the same way when the directory is missing.
    if [[ ! -f target/kafka-jars/kafka_2.13-4.4.0.jar ]]; then
        log "mvn dependency:copy-dependencies -> target/kafka-jars"
        rm -rf target/kafka-jars.partial
        if mvn -q -f crates/ebq-e2e/kafka/pom.xml dependency:copy-dependencies \
            -DoutputDirectory="$PWD/target/kafka-jars.partial" >/dev/null; then
            rm -rf target/kafka-jars && mv target/kafka-jars.partial target/kafka-jars
        else
            log "warning: could not fetch Kafka's jars; the kafka:: tests will fetch them again"
        fi
    fi

    # --- Python decoders the tests use (PyPI, in target/pyenv) ------------------
    # opentelemetry-proto decodes ebq's OTLP pushes independently of ebq's own
    # protobuf code (tests/otlp.rs). Other test packages (pyarrow, duckdb,
    # prometheus-client) are installed by the tests on first use.
    PYENV=target/pyenv
    if [[ ! -x $PYENV/bin/python ]]; then
        log "python3 -m venv $PYENV"
        python3 -m venv "$PYENV" || log "warning: could not create $PYENV; the Python-checked tests will fail"
    fi
    if [[ -x $PYENV/bin/python ]] && ! "$PYENV/bin/python" -c 'import opentelemetry.proto' 2>/dev/null; then
        log "pip install opentelemetry-proto"
        "$PYENV/bin/python" -m pip install --quiet --disable-pip-version-check opentelemetry-proto ||
            log "warning: pip install opentelemetry-proto failed; tests/otlp.rs will fail"
    fi
    # PyDarshan 3.5.0 (darshan-util's C reader, `python -m darshan summary`) and
    # Drishti read the Darshan logs `ebq report io --darshan-log` writes
    # (crates/ebq-e2e/tests/e2e/darshan_log.rs).
    for pkg in darshan==3.5.0:darshan drishti-io:drishti; do
        if [[ -x $PYENV/bin/python ]] && ! "$PYENV/bin/python" -c "import ${pkg#*:}" 2>/dev/null; then
            log "pip install ${pkg%%:*}"
            "$PYENV/bin/python" -m pip install --quiet --disable-pip-version-check "${pkg%%:*}" ||
                log "warning: pip install ${pkg%%:*} failed; the darshan_log:: tests will fail"
        fi
    done

    # The deploy test validates deploy/kubernetes/*.yaml with kubernetes-validate (PyPI:
    # the Kubernetes OpenAPI schemas, bundled, checked offline) in the tests' venv,
    # target/pyenv (crates/ebq-e2e/tests/common: python_with).
    if ! target/pyenv/bin/python -c 'import kubernetes_validate' >/dev/null 2>&1; then
        log "pip install kubernetes-validate (target/pyenv)"
        [[ -x target/pyenv/bin/python ]] || python3 -m venv target/pyenv || die "python3 -m venv target/pyenv failed"
        target/pyenv/bin/python -m pip install --quiet --disable-pip-version-check kubernetes-validate ||
            { log "error: pip install kubernetes-validate failed"; return 1; }
    fi
}
fetch_log=target/setup-fetch.log
mkdir -p target
fetch_test_packages >"$fetch_log" 2>&1 &
fetch_pid=$!

# --- Build ------------------------------------------------------------------
log "cargo build --release (at ${SECONDS} s of setup)"
# scripts/test.sh sets EBQ_SETUP_ALL_TARGETS=1: built with the tests, the
# dependencies get the features the tests' dev-dependencies add (cargo unifies
# them per build), so `cargo test` reuses every unit instead of building ebq and
# a few of its dependencies a second time.
# EBQ_CARGO_TIMINGS=1 adds cargo's --timings: target/cargo-timings/ then shows
# which crates a cold build spends its time on (issue 35's 15-minute target).
timings=()
[[ -n ${EBQ_CARGO_TIMINGS:-} ]] && timings=(--timings)
if [[ -n ${EBQ_SETUP_ALL_TARGETS:-} ]]; then
    cargo build --quiet --release --workspace --all-targets "${timings[@]}"
else
    cargo build --quiet --release --workspace "${timings[@]}"
fi

fetch_status=0
wait "$fetch_pid" || fetch_status=$?
cat "$fetch_log" >&2
[[ $fetch_status == 0 ]] || die "fetching the test packages failed (above)"

# Readers that consume all their input: `head` could leave the writer to die of
# SIGPIPE, which pipefail and set -e would turn into setup's exit status (141).
clang_v=$(clang --version 2>/dev/null | sed -nE '1s/.*version ([^ ]+).*/\1/p')
bpftool_v=$(bpftool version 2>/dev/null | awk 'NR == 1 {print $2}')
cargo_v=$(cargo --version 2>/dev/null | awk '{print $2}')
echo "setup ok after ${SECONDS} s: clang ${clang_v:-?}, bpftool ${bpftool_v:-?}, cargo ${cargo_v:-?}, kernel $(uname -r)"
