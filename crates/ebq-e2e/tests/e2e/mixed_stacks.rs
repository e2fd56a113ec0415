//! Issue 40 item 1: a profile sample taken in user mode has no kernel frames,
//! and one of a kernel thread no user frames. Both are valid keys (`[user]`,
//! `[kernel]`), so a combined user+kernel flame graph keeps every sample.
//!
//! Two workloads run under `profile:hz:999` beside bpftrace's own profile probe:
//! `ebq-spin` (tests/c/profile/spin.c) spins in user code, `ebq-sysloop`
//! (tests/c/profile/sysloop.c) reads 1 MiB of /dev/zero and sums it, over and
//! over, so its samples fall in user and kernel code. Each tool's timer fires
//! on its own phase, so a process's sample counts agree to within a few
//! samples, not exactly: within 5 %, as the issue sets. 999 Hz rather than 99
//! so that a few samples are a small share even when the workloads share the
//! CPUs with others.
//!
//! Beside other tracers, both tools also lose samples nobody counts: the kernel
//! skips a perf-event program while a classic tracepoint program runs on the
//! CPU. The syscall loop makes few, long system calls so that those programs
//! (syscount's, a `raw_syscalls` one-liner's) hold a few percent of its time,
//! not the third they held with one-byte writes (ebq 379 against bpftrace's 308).

use crate::common;
use crate::profile::{assert_drawn_in_chromium, build_profile_program, build_spin, last_cpu};

use common::{rows_of, s, u};
use ebq::{RunningQuery, Scope};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// bpftrace counting profile samples per comm; attached when [`Bpftrace::start`] returns.
struct Bpftrace {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Bpftrace {
    fn start(comms: &[&str]) -> Bpftrace {
        let filter = comms.iter().map(|c| format!("comm == \"{c}\"")).collect::<Vec<_>>().join(" || ");
        let mut child = Command::new("bpftrace")
            .args(["-f", "json", "-e", &format!("profile:hz:999 /{filter}/ {{ @[comm] = count(); }}")])
            .stdout(Stdio::piped())
            .spawn()
            .expect("bpftrace (scripts/setup.sh installs it)");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(line.contains("attached_probes"), "bpftrace did not attach: {line}");
        Bpftrace { child, out }
    }

    /// Stops bpftrace (SIGINT prints its map) and returns the samples per comm.
    /// bpftrace 0.17 once let a SIGINT pass and ran on (a full-suite run
    /// waited 10 minutes, until a second SIGINT by hand ended it and the
    /// test passed): SIGINT is sent again each second, for at most 30 s.
    fn counts(mut self) -> BTreeMap<String, u64> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            // SAFETY: kill sends a signal to our own child; no memory is touched.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            let wait = Instant::now() + Duration::from_secs(1);
            while Instant::now() < wait && self.child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(20));
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "bpftrace did not end in 30 s of SIGINTs");
        };
        assert!(status.success(), "bpftrace: {status}");
        let text: Vec<String> = self.out.lines().map(Result::unwrap).collect();
        let map = text
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|v| v["type"] == "map")
            .unwrap_or_else(|| panic!("no map in bpftrace's output: {text:?}"));
        map["data"]["@"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).collect()
    }
}

#[test]
fn empty_kernel_stacks_are_keys_and_samples_per_process_match_bpftrace() {
    let (dir, spin) = build_spin("mixed");
    let (loop_dir, sysloop) = build_profile_program("mixed", "sysloop");
    let sql = "SELECT comm, ustack, kstack, COUNT(*) FROM profile:hz:999 \
               WHERE comm = 'ebq-spin' OR comm = 'ebq-sysloop' GROUP BY comm, ustack, kstack";
    let engine = common::engine();
    let mut q = engine
        .prepare(sql)
        .and_then(|p| RunningQuery::start(&p, Scope::All))
        .unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let bpftrace = Bpftrace::start(&["ebq-spin", "ebq-sysloop"]);
    let cpu = last_cpu();
    let mut spinner = Command::new(&spin).arg(cpu.to_string()).arg("2").stdout(Stdio::null()).spawn().unwrap();
    let mut syscall_loop = Command::new(&sysloop).arg("30000").spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut outs = vec![];
    while spinner.try_wait().unwrap().is_none() || syscall_loop.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "workloads did not finish");
        outs.extend(q.poll(Duration::from_millis(50)).unwrap());
    }
    assert!(spinner.wait().unwrap().success() && syscall_loop.wait().unwrap().success());
    let theirs = bpftrace.counts();
    outs.extend(q.finish().unwrap());
    let stats = q.stats().unwrap();
    let rows = rows_of(&outs);
    let mut ours: BTreeMap<String, u64> = BTreeMap::new();
    for r in &rows {
        *ours.entry(s(r, "comm")).or_default() += u(r, "COUNT(*)");
    }
    let user_mode = |comm: &str| -> u64 {
        rows.iter().filter(|r| s(r, "comm") == comm && s(r, "kstack") == "[user]").map(|r| u(r, "COUNT(*)")).sum()
    };
    eprintln!(
        "ebq {ours:?}, bpftrace {theirs:?}; user-mode samples: spin {}, sysloop {}; {stats:?}",
        user_mode("ebq-spin"),
        user_mode("ebq-sysloop")
    );
    // Exact or accounted: every matched sample is in a group, or dropped. An empty stack is a
    // key (`[user]`), never a drop; a drop is a stack whose bucket of the stack map another,
    // distinct stack holds (bpf_get_stackid refuses it, and ebq counts it). With a few
    // hundred distinct kernel stacks in 16,384 buckets such a collision is likely (about
    // n²/2m); one full-suite run here dropped 1 sample.
    let grouped: u64 = ours.values().sum();
    common::assert_exact_or_accounted(grouped, stats.matched, &stats, "samples in groups");
    for comm in ["ebq-spin", "ebq-sysloop"] {
        let (a, b) = (ours.get(comm).copied().unwrap_or(0), theirs.get(comm).copied().unwrap_or(0));
        assert!(b > 200, "bpftrace sampled {comm} {b} times");
        assert!(a.abs_diff(b) as f64 <= b as f64 * 0.05, "{comm}: ebq {a}, bpftrace {b}");
    }
    // The spinner runs in user code: nearly all its samples have an empty kernel stack,
    // and their user stack is its hot loop.
    let spin_total = ours["ebq-spin"];
    assert!(user_mode("ebq-spin") * 10 >= spin_total * 9, "{rows:#?}");
    assert!(rows.iter().any(|r| s(r, "kstack") == "[user]" && s(r, "ustack").contains("spin_hot")), "{rows:#?}");
    // The loop's samples fall in both halves: some in user code, some in its reads.
    assert!(user_mode("ebq-sysloop") > 0, "{rows:#?}");
    assert!(
        rows.iter().any(|r| s(r, "comm") == "ebq-sysloop" && s(r, "kstack").contains("do_syscall_64")),
        "{rows:#?}"
    );
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::remove_dir_all(loop_dir);
}

#[test]
fn flamegraph_of_user_and_kernel_stacks_draws_both_halves() {
    let (dir, sysloop) = build_profile_program("halves", "sysloop");
    let svg = dir.join("halves.svg");
    let folded = dir.join("halves.folded");
    let command = format!("{sysloop} 15000");
    // 999 Hz: some hundred samples, so both halves are drawn whatever the load.
    let sql = "SELECT ustack, kstack, COUNT(*) FROM profile:hz:999 GROUP BY ustack, kstack";
    let mut stats = vec![];
    for (format, path) in [("flamegraph", &svg), ("folded", &folded)] {
        let out = Command::new(common::ebq_bin())
            .args(["-c", &command, "--format", format, "-o"])
            .arg(path)
            .arg(sql)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        stats.push(common::cli_stats(&stderr));
    }
    // Folded lines run from the user stack's outermost frame to the kernel's innermost.
    let text = std::fs::read_to_string(&folded).unwrap();
    // Exact or accounted: every matched sample is on a line, or dropped (a stack whose
    // bucket of the stack map another stack holds is dropped and counted).
    let drawn: u64 = text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    common::assert_exact_or_accounted(drawn, stats[1].matched, &stats[1], "samples in the folded stacks");
    let in_user = text.lines().filter(|l| l.rsplit_once(' ').unwrap().0.ends_with(";[user]")).count();
    let in_kernel =
        text.lines().filter(|l| l.contains("entry_SYSCALL_64") && !l.starts_with("entry_SYSCALL_64")).count();
    assert!(
        in_user > 0 && in_kernel > 0,
        "user-mode lines {in_user}, system-call lines with user frames below {in_kernel}:\n{text}"
    );
    let page = std::fs::read_to_string(&svg).unwrap();
    assert!(page.contains("[user]") && page.contains("entry_SYSCALL_64"), "both halves in the SVG");
    assert_drawn_in_chromium(&svg);
    let _ = std::fs::remove_dir_all(dir);
}
