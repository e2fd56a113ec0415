//! Can this machine run queries? Each missing piece gets one actionable message.

use ebq_front::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Fails unless the process may load BPF programs (root, or CAP_BPF + CAP_PERFMON).
pub fn check_privileges() -> Result<()> {
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    const CAP_SYS_ADMIN: u32 = 21;
    let caps = effective_caps().unwrap_or(0);
    let has = |c: u32| caps & (1u64 << c) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON)) {
        return Ok(());
    }
    Err(Error::Environment {
        problem: "ebq needs to load eBPF programs, which requires root (or the capabilities CAP_BPF and CAP_PERFMON); this process has neither".into(),
        help: "run it as root (`sudo ebq …`), or grant the capabilities: `sudo setcap cap_bpf,cap_perfmon+ep $(which ebq)`".into(),
    })
}

/// Effective capability mask of this process, from /proc/self/status.
fn effective_caps() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// The clang to compile with: `$EBQ_CLANG`, else `clang` or `clang-14…19` on PATH.
pub fn find_clang() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("EBQ_CLANG") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(Error::Environment {
        problem: "clang was not found on PATH; ebq compiles each query to BPF with clang at run time".into(),
        help: "install it (`apt-get install clang llvm libbpf-dev`, or run scripts/setup.sh), or point EBQ_CLANG at a clang binary".into(),
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata().map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

/// Fails with a clear message when libbpf's headers are missing.
pub fn check_headers() -> Result<()> {
    if Path::new("/usr/include/bpf/bpf_helpers.h").exists() {
        return Ok(());
    }
    Err(Error::Environment {
        problem: "libbpf's headers (/usr/include/bpf/bpf_helpers.h) are missing; generated programs include them"
            .into(),
        help: "install them: `apt-get install libbpf-dev` (or run scripts/setup.sh)".into(),
    })
}
