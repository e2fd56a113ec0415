//! Least privilege: once the queries are attached, drop every capability
//! the daemon does not need any more.
//!
//! What the running daemon still does, and what that needs:
//! - read and clear maps, flip the window variable, read program statistics:
//!   all through file descriptors it already holds — **no capability**;
//! - serve `/metrics` on the socket bound before the drop — none;
//! - on SIGHUP, compile, load and attach added or changed queries:
//!   `CAP_BPF` (load programs, create maps) and `CAP_PERFMON` (tracing
//!   programs, perf-event attachment of tracepoints and uprobes). These two
//!   are kept unless the config says `reload = false`, in which case the
//!   daemon keeps **none** and a reload can only detach queries.
//!
//! Dropped: everything else, including `CAP_SYS_ADMIN` (needed once, for
//! `bpf_enable_stats`, whose fd is held), `CAP_DAC_OVERRIDE`, `CAP_NET_*`
//! and `CAP_SETPCAP`. The bounding set is reduced to the kept set too, and
//! `no_new_privs` is set, so programs the daemon starts (clang) cannot
//! regain what was dropped: as uid 0 an `execve` would otherwise refill the
//! permitted set from the bounding set.

/// `CAP_BPF`.
pub const CAP_BPF: u32 = 39;
/// `CAP_PERFMON`.
pub const CAP_PERFMON: u32 = 38;
const CAP_SETPCAP: u32 = 8;
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The highest capability number this kernel knows.
fn last_cap() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(40)
}

/// Names for the log.
pub fn names(caps: &[u32]) -> String {
    let name = |c: &u32| match *c {
        CAP_BPF => "cap_bpf".to_string(),
        CAP_PERFMON => "cap_perfmon".to_string(),
        c => format!("cap_{c}"),
    };
    if caps.is_empty() {
        "none".into()
    } else {
        caps.iter().map(name).collect::<Vec<_>>().join(",")
    }
}

/// Whether `c` is in this process's bounding set.
fn in_bounding_set(c: u32) -> bool {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_CAPBSET_READ, c as libc::c_ulong, 0, 0, 0) == 1 }
}

/// Keeps only `keep` in the effective, permitted and bounding sets, clears
/// the inheritable and ambient sets, and sets `no_new_privs`.
///
/// Only capabilities still in the bounding set are dropped from it, so a
/// process started with a bounding set of exactly what it needs (a container
/// with `capabilities: drop: [ALL]`, `add: [BPF, PERFMON, …]`) needs no
/// CAP_SETPCAP for this.
pub fn drop_all_but(keep: &[u32]) -> std::io::Result<()> {
    let err = std::io::Error::last_os_error;
    // Bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
    for c in 0..=last_cap() {
        if !keep.contains(&c) && c != CAP_SETPCAP && in_bounding_set(c) {
            // SAFETY: prctl with integer arguments only.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, c as libc::c_ulong, 0, 0, 0) } != 0 {
                return Err(err());
            }
        }
    }
    if !keep.contains(&CAP_SETPCAP) && in_bounding_set(CAP_SETPCAP) {
        // SAFETY: as above.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, CAP_SETPCAP as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(err());
        }
    }
    // SAFETY: as above.
    unsafe { libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0) };
    let mut data = [Data::default(); 2];
    for &c in keep {
        let (word, bit) = ((c / 32) as usize, 1u32 << (c % 32));
        data[word].effective |= bit;
        data[word].permitted |= bit;
    }
    let mut header = Header { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    // SAFETY: header and data are the v3 layout capset expects (two data words).
    if unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) } != 0 {
        return Err(err());
    }
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(err());
    }
    Ok(())
}

/// `CapEff` of this process (from /proc/self/status), for the log and tests.
pub fn effective() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}
