//! Attaching the query's program to its event, and checking first that the
//! kernel allows that kind of probe at all.
//!
//! The check runs before clang, so a kernel without kprobes or trampolines
//! answers in milliseconds with what to use instead, not with a failed attach.

use super::load::Scope;
use ebq_front::bind::{BoundEvent, EventSource};
use ebq_front::codegen::{AttachPoint, Program};
use ebq_front::error::{Error, Result};
use libbpf_rs::{Link, Object, ProgramMut};
use std::path::Path;

/// Fails with an explanation and an alternative when the kernel cannot attach
/// `event`'s kind of probe (kprobes not built in; fentry refused).
pub fn check_available(event: &BoundEvent) -> Result<()> {
    let instead = |alternative: &Option<String>| match alternative {
        Some(tp) => format!(
            "use tracepoint {} instead (`ebq describe {tp}` lists its columns)",
            tp.trim_start_matches("tracepoint:")
        ),
        None => "use a tracepoint instead: `ebq events 'PATTERN'` lists this kernel's tracepoints".into(),
    };
    match &event.source {
        EventSource::Kprobe { alternative, .. } if !kprobes_available() => Err(Error::Environment {
            problem: format!(
                "{}: this kernel does not allow kprobes (CONFIG_KPROBES is off: neither the kprobe PMU \
                 /sys/bus/event_source/devices/kprobe nor tracefs kprobe_events exists)",
                event.event_description()
            ),
            help: instead(alternative),
        }),
        EventSource::Fentry { alternative, function, exit, .. } => match trampoline_probe(function, *exit) {
            Ok(()) => Ok(()),
            Err((step, errno)) => Err(Error::Environment {
                problem: format!(
                    "{}: this kernel does not allow fentry/fexit programs ({step} failed: {})",
                    event.event_description(),
                    std::io::Error::from_raw_os_error(errno)
                ),
                help: instead(alternative),
            }),
        },
        _ => Ok(()),
    }
}

/// kprobes are attachable through the kprobe PMU or, on older kernels, tracefs.
fn kprobes_available() -> bool {
    Path::new("/sys/bus/event_source/devices/kprobe/type").exists()
        || Path::new("/sys/kernel/tracing/kprobe_events").exists()
        || Path::new("/sys/kernel/debug/tracing/kprobe_events").exists()
}

/// Loads and attaches `r0 = 0; exit` as fentry (fexit) of `function`, then
/// closes both; `Err((step, errno))` when the kernel refuses.
fn trampoline_probe(function: &str, exit: bool) -> std::result::Result<(), (&'static str, i32)> {
    use libbpf_sys as sys;
    let btf_id = ebq_front::host::btf::btf_functions()
        .and_then(|f| f.get(function))
        .map(|f| f.btf_id)
        .ok_or(("finding the function in the kernel's BTF", libc::ENOENT))?;
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EINVAL);
    let attach_type = if exit { sys::BPF_TRACE_FEXIT } else { sys::BPF_TRACE_FENTRY };
    let insns = [
        sys::bpf_insn { code: (sys::BPF_ALU64 | sys::BPF_MOV | sys::BPF_K) as u8, ..Default::default() },
        sys::bpf_insn { code: (sys::BPF_JMP | sys::BPF_EXIT) as u8, ..Default::default() },
    ];
    let mut opts = sys::bpf_prog_load_opts {
        sz: std::mem::size_of::<sys::bpf_prog_load_opts>() as _,
        expected_attach_type: attach_type,
        attach_btf_id: btf_id,
        ..Default::default()
    };
    // SAFETY: the strings are NUL-terminated literals, insns and opts outlive the call.
    let prog = unsafe {
        sys::bpf_prog_load(
            sys::BPF_PROG_TYPE_TRACING,
            c"ebq_probe_check".as_ptr(),
            c"GPL".as_ptr(),
            insns.as_ptr(),
            insns.len() as _,
            &mut opts,
        )
    };
    if prog < 0 {
        return Err(("loading a trampoline program", errno()));
    }
    // SAFETY: prog is a program fd we own; a NULL opts pointer is allowed.
    let link = unsafe { sys::bpf_link_create(prog, 0, attach_type, std::ptr::null()) };
    let result = if link < 0 { Err(("attaching a trampoline program", errno())) } else { Ok(()) };
    // SAFETY: closing fds this function opened.
    unsafe {
        if link >= 0 {
            libc::close(link);
        }
        libc::close(prog);
    }
    result
}

/// The links of an attached object: the programs that count, and the `-c`
/// process tracking (see [`crate::object::KernelObject::detach`]).
pub struct Links {
    /// The query's programs: detached before the final read.
    pub counting: Vec<Link>,
    /// The fork and exit followers of a `-c` scope.
    pub tracking: Vec<Link>,
    /// The periodic timers' perf events (`interval:`, `profile:hz`), to count their periods.
    pub timers: Vec<TimerClock>,
}

/// A periodic timer's perf event, held beside its link: the time it ran
/// says how many periods passed, each one a firing the kernel owed the program.
///
/// The kernel runs a perf-event program only when no other BPF program of
/// the tracing kinds (classic tracepoints, kprobes, perf events) runs on
/// the CPU (`bpf_prog_active`), and unlike a tracepoint it counts no
/// `recursion_misses` when it skips one; a timer interrupt delayed past a
/// whole period skips that firing too. So the periods passed, less the
/// program's runs, are the firings lost: [`TimerClock::stop_and_count_periods`].
pub struct TimerClock {
    fd: std::os::fd::OwnedFd,
    period_ns: u64,
    /// CLOCK_MONOTONIC just after libbpf enabled the event: its timer's
    /// periods are on that clock (an hrtimer), not on the event's own count
    /// (`sched_clock`, which drifts from it by tens of ppm here).
    enabled_ns: u64,
}

impl TimerClock {
    /// Stops the timer (no firing after this) and returns the firings it
    /// owed the program: the periods that ended at least 2 ms (or half a
    /// period, if less) before the stop. The interrupt of a period that
    /// ended just before it may still have been on its way (tens of µs in
    /// this VM), and the firing then never came: not owed.
    pub fn stop_and_count_periods(&self) -> u64 {
        use std::os::fd::AsRawFd;
        // `_IO('$', 1)` in linux/perf_event.h (neither libc nor libbpf-sys exports it).
        const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;
        // SAFETY: PERF_EVENT_IOC_DISABLE takes no argument; fd is our perf event.
        unsafe { libc::ioctl(self.fd.as_raw_fd(), PERF_EVENT_IOC_DISABLE as _, 0) };
        let ran = ebq_exec::monotonic_ns().saturating_sub(self.enabled_ns);
        let period = self.period_ns.max(1);
        ran.saturating_sub((period / 2).min(2_000_000)) / period
    }
}

/// Attaches the programs of `object` in the contract's order; the
/// process-tracking ones only when `scope` tracks processes.
pub fn attach_all(object: &Object, program: &Program, scope: &Scope) -> Result<Links> {
    let follow = matches!(scope, Scope::Tracked(_));
    let mut links = Links { counting: vec![], tracking: vec![], timers: vec![] };
    for info in &program.progs {
        let event = match &info.attach {
            AttachPoint::ProcessTracking(_) if !follow => continue,
            AttachPoint::ProcessTracking(_) | AttachPoint::FaultCount(_) => None,
            AttachPoint::Query(e) | AttachPoint::PairStart(e) => Some(e),
        };
        let prog = object.progs_mut().find(|p| p.name() == info.name).ok_or_else(|| Error::Io {
            what: format!("find program {}", info.name),
            source: std::io::Error::other("not in the object"),
        })?;
        let attached = match event {
            Some(e) => attach_query(&prog, e, scope, &mut links.timers),
            None => prog.attach().map(|l| vec![l]),
        };
        let attached = attached.map_err(|e| Error::Load {
            what: format!("attach {}", info.attach.describe()),
            errno: match e.kind() {
                libbpf_rs::ErrorKind::NotFound => libc::ENOENT,
                libbpf_rs::ErrorKind::PermissionDenied => libc::EPERM,
                _ => libc::EINVAL,
            },
            log: String::new(),
        })?;
        match info.attach {
            AttachPoint::ProcessTracking(_) => links.tracking.extend(attached),
            _ => links.counting.extend(attached),
        }
    }
    Ok(links)
}

/// Attaches the query's main program: uprobes to the resolved file and offset,
/// only in the `-p` process when there is one; a USDT probe as one uprobe per
/// site, its semaphore as the uprobe's reference counter (the kernel
/// increments it in every process the uprobe is placed in, and decrements it
/// at detach) and its spec index as the cookie; everything else by its section.
/// A periodic timer's perf events are kept in `timers` too ([`TimerClock`]).
pub fn attach_query(
    prog: &ProgramMut<'_>,
    event: &BoundEvent,
    scope: &Scope,
    timers: &mut Vec<TimerClock>,
) -> libbpf_rs::Result<Vec<Link>> {
    let pid = match scope {
        Scope::Process(p) => *p as i32,
        _ => -1, // every process; -c scoping is done by the program's pid check
    };
    match &event.source {
        EventSource::Uprobe { path, ret, functions, .. } if !functions.is_empty() => {
            // One link for every function, each with its position as the cookie (`func`);
            // its uprobes detach together (one after another, they took 0.08 s each).
            let opts = libbpf_rs::UprobeMultiOpts {
                offsets: functions.iter().map(|(_, o)| *o as usize).collect(),
                cookies: (0..functions.len() as u64).collect(),
                retprobe: *ret,
                ..Default::default()
            };
            prog.attach_uprobe_multi_with_opts(pid, path, "", opts).map(|l| vec![l])
        }
        EventSource::Uprobe { path, offset, ret, .. } => {
            prog.attach_uprobe(*ret, pid, path, *offset as usize).map(|l| vec![l])
        }
        EventSource::Usdt { path, sites, .. } => sites
            .iter()
            .map(|s| {
                let opts = libbpf_rs::UprobeOpts {
                    ref_ctr_offset: s.semaphore as usize,
                    cookie: s.cookie,
                    retprobe: false,
                    ..Default::default()
                };
                prog.attach_uprobe_with_opts(pid, path, s.offset as usize, opts)
            })
            .collect(),
        EventSource::Timer { hz, period_ns, all_cpus } => {
            let cpus = if *all_cpus { online_cpus() } else { vec![0] };
            // `profile:hz:N` is a fixed period of 1/N s, not perf's frequency mode: the kernel
            // moves a frequency's period, and only a fixed one says how many firings were owed.
            let period_ns = if *hz > 0 { (1_000_000_000 + hz / 2) / hz } else { *period_ns };
            cpus.into_iter()
                .map(|cpu| {
                    use std::os::fd::FromRawFd;
                    let fd = cpu_clock_event(cpu, period_ns).map_err(libbpf_rs::Error::from)?;
                    // SAFETY: fd is the perf event just opened; the duplicate is ours to own.
                    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
                    // SAFETY: dup, when not -1, is a new descriptor nothing else owns (owned
                    // before the attach, so a failed attach closes it).
                    let dup = (dup >= 0).then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(dup) });
                    // The link owns the perf event: destroying it closes the fd.
                    let link = prog.attach_perf_event(fd)?;
                    if let Some(fd) = dup {
                        let enabled_ns = enabled_at(&fd);
                        timers.push(TimerClock { fd, period_ns, enabled_ns });
                    }
                    Ok(link)
                })
                .collect()
        }
        _ => prog.attach().map(|l| vec![l]),
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`: `0-3,6`).
fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_else(|_| "0".into());
    let mut out = vec![];
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            out.extend(a..=b);
        }
    }
    out
}

/// CLOCK_MONOTONIC when libbpf enabled the perf event `fd`: now less the
/// time the event has been enabled (its `time_enabled`, a span of µs, so
/// the drift of perf's clock against CLOCK_MONOTONIC does not matter), read
/// between two clock reads close together. A clock read alone after the
/// enable came late when this thread was preempted in between, and the
/// timer's last period then went uncounted (the beside-tracers run: 1
/// firing skipped, 0 missed).
fn enabled_at(fd: &std::os::fd::OwnedFd) -> u64 {
    use std::os::fd::AsRawFd;
    let mut best = None;
    for _ in 0..8 {
        let before = ebq_exec::monotonic_ns();
        // read_format PERF_FORMAT_TOTAL_TIME_ENABLED: the count, then the time enabled.
        let mut values = [0u64; 2];
        // SAFETY: fd is our perf event; values holds the 16 bytes its read format gives.
        let n = unsafe { libc::read(fd.as_raw_fd(), values.as_mut_ptr().cast(), 16) };
        let after = ebq_exec::monotonic_ns();
        if n != 16 {
            return after;
        }
        let spread = after - before;
        if best.is_none_or(|(s, _)| spread < s) {
            best = Some((spread, before.saturating_sub(values[1])));
        }
        if spread < 50_000 {
            break;
        }
    }
    best.map_or_else(ebq_exec::monotonic_ns, |(_, at)| at)
}

/// Opens a perf software cpu-clock event on `cpu` for every task: one
/// sample every `period_ns` of CPU clock.
fn cpu_clock_event(cpu: u32, period_ns: u64) -> std::io::Result<i32> {
    use libbpf_sys as sys;
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<sys::perf_event_attr>() as u32,
        config: sys::PERF_COUNT_SW_CPU_CLOCK as u64,
        ..Default::default()
    };
    // Opened stopped: libbpf enables it once the program is attached, so
    // every period counted ([`TimerClock`]) fired with the program there.
    attr.set_disabled(1);
    // The time it has been enabled, read once at the start ([`enabled_at`]).
    attr.read_format = sys::PERF_FORMAT_TOTAL_TIME_ENABLED as u64;
    attr.__bindgen_anon_1.sample_period = period_ns;
    // SAFETY: attr is a valid, fully initialized perf_event_attr of the size it declares.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const sys::perf_event_attr,
            -1i32,
            cpu as i32,
            -1i32,
            sys::PERF_FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd as i32)
}
