//! Issue 40 item 11: the shipped `runqlat` and `cpudist` beside libbpf-tools'
//! `/usr/sbin/runqlat` and `/usr/sbin/cpudist` (Debian libbpf-tools, installed
//! by scripts/setup.sh) on the same run of a scheduler-heavy process:
//! `ebq-workload pingpong`, threads ping-ponging bytes over pipes between the
//! two CPUs while a spinner holds each CPU.
//!
//! The windows: as in the biolatency -F comparison (block_flags.rs), every
//! tool is confined to the workload's events and attached before the first of
//! them. Here the confinement is the process (`-p PID`; ebq: `WHERE q.tgid =
//! PID`, `s.next.tgid = PID`, the same tests at the same events), and the
//! workload makes no scheduler event until the test writes a byte to its
//! stdin (it blocks in read(2), no polling), which it does once ebq's queries
//! have started and each peer's links are in its fdinfo; every tool stops
//! after the workload has exited. So all of them see the same events.
//!
//! The rule: equal totals (exact or accounted: ebq's losses and the peer's
//! programs' recursion misses), and every event at most one bucket from the
//! peer's. Each tool reads the clock in its own program, so a latency within
//! a few hundred nanoseconds of a power of two may land on either side; how
//! many do depends on the load (5–7 % on a quiet machine, 12.7 % in a CI run),
//! so the share is printed, not bounded, except that fewer than half move: a
//! unit or clock error (a factor of two or more) moves nearly all of them.

use crate::common;

use common::{engine, prog_recursion_misses, rows_of, shipped_query, wait_for_links, workload_bin};
use ebq::runtime::Value;
use ebq::{QueryStats, RunningQuery, Scope};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// libbpf-tools' log2 slot of a value in µs: 0 for 0 and 1, else floor(log2).
fn slot_of(lo: u64) -> u32 {
    if lo < 2 {
        0
    } else {
        63 - lo.leading_zeros()
    }
}

/// The `lo -> hi : count` lines of a libbpf-tools log2 histogram, by slot.
fn peer_slots(text: &str) -> BTreeMap<u32, u64> {
    let mut slots = BTreeMap::new();
    for line in text.lines() {
        let Some((range, rest)) = line.split_once(':') else { continue };
        let Some((lo, _)) = range.split_once("->") else { continue };
        let (Ok(lo), Some(Ok(count))) =
            (lo.trim().parse::<u64>(), rest.split_whitespace().next().map(str::parse::<u64>))
        else {
            continue;
        };
        if count > 0 {
            *slots.entry(slot_of(lo)).or_default() += count;
        }
    }
    slots
}

/// ebq's HIST buckets (`[lo, hi)`) in the peer's slots.
fn ebq_slots(value: Option<&Value>) -> BTreeMap<u32, u64> {
    let mut slots = BTreeMap::new();
    let Some(Value::Hist(buckets)) = value else { return slots };
    for b in buckets.iter().filter(|b| b.count > 0) {
        *slots.entry(slot_of(u64::try_from(b.lo).expect("a latency is not negative"))).or_default() += b.count;
    }
    slots
}

/// How many events must move one bucket to turn one histogram into the other
/// (the difference of the running totals, summed over the buckets).
fn moved(a: &BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) -> u64 {
    let last = a.keys().chain(b.keys()).max().copied().unwrap_or(0);
    let (mut run_a, mut run_b, mut moved) = (0i64, 0i64, 0u64);
    for k in 0..=last {
        run_a += a.get(&k).copied().unwrap_or(0) as i64;
        run_b += b.get(&k).copied().unwrap_or(0) as i64;
        moved += run_a.abs_diff(run_b);
    }
    moved
}

/// What ebq lost of the events a peer counts: not `superseded` or open pairs
/// (the peer's start map is overwritten and left over alike), not `unmatched`.
fn lost_beside_peer(stats: &QueryStats) -> u64 {
    stats.dropped + stats.missed + stats.missed_starts + stats.pending_full + stats.evicted
}

/// Whether each event of `a` can be paired with one of `b` at most one bucket
/// away: sorting both, the j-th events' buckets differ by at most one for
/// every j, which holds exactly when every running total of one reaches the
/// other's running total one bucket earlier.
fn within_one_bucket(a: &BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) -> bool {
    let last = a.keys().chain(b.keys()).max().copied().unwrap_or(0);
    let (mut run_a, mut run_b) = (0u64, 0u64);
    for k in 0..=last {
        let (prev_a, prev_b) = (run_a, run_b);
        run_a += a.get(&k).copied().unwrap_or(0);
        run_b += b.get(&k).copied().unwrap_or(0);
        if prev_a > run_b || prev_b > run_a {
            return false;
        }
    }
    true
}

/// The rule of this file, for one tool: equal totals (or a difference within
/// what either side lost), every event within one bucket of the peer's, and
/// fewer than half of them one bucket away.
fn assert_agree(ours: &BTreeMap<u32, u64>, theirs: &BTreeMap<u32, u64>, lost: u64, what: &str) {
    let (total_ours, total_theirs) = (ours.values().sum::<u64>(), theirs.values().sum::<u64>());
    let moved = moved(ours, theirs);
    eprintln!(
        "{what}: ebq {total_ours} ({ours:?}), libbpf-tools {total_theirs} ({theirs:?}), {moved} moved, {lost} lost"
    );
    assert!(total_theirs > 1000, "{what}: too few events to compare: {theirs:?}");
    if lost == 0 {
        assert_eq!(total_ours, total_theirs, "{what}: totals, ebq {ours:?} vs libbpf-tools {theirs:?}");
        assert!(
            within_one_bucket(ours, theirs),
            "{what}: some event is more than one bucket from the peer's: ebq {ours:?} vs libbpf-tools {theirs:?}"
        );
        assert!(
            moved * 2 < total_ours,
            "{what}: {moved} of {total_ours} events one bucket apart (half or more is a unit or clock error): \
             ebq {ours:?} vs libbpf-tools {theirs:?}"
        );
    } else {
        assert!(
            total_ours.abs_diff(total_theirs) <= lost,
            "{what}: ebq {total_ours}, libbpf-tools {total_theirs}, {lost} lost in all"
        );
    }
}

#[test]
fn one_bucket_rule_holds_for_shifts_of_one_and_fails_for_two() {
    let a: BTreeMap<u32, u64> = [(1, 10), (2, 10)].into();
    assert!(within_one_bucket(&a, &[(2, 10), (3, 10)].into()));
    assert!(within_one_bucket(&a, &[(0, 5), (1, 10), (2, 5)].into()));
    assert!(!within_one_bucket(&a, &[(3, 10), (4, 10)].into()));
    assert!(within_one_bucket(&a, &[(1, 10), (3, 10)].into()));
    assert!(!within_one_bucket(&a, &[(1, 10), (4, 10)].into()));
}

/// A libbpf-tools histogram tool scoped to `tgid`, printing once at SIGINT.
fn start_peer(tool: &str, tgid: u32) -> Child {
    Command::new(format!("/usr/sbin/{tool}"))
        .args(["-p", &tgid.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("/usr/sbin/{tool} (Debian libbpf-tools, installed by scripts/setup.sh): {e}"))
}

/// SIGINT, then its histogram text.
fn stop_peer(child: Child) -> String {
    // SAFETY: kill on a child we spawned and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Blocks until `pid`'s thread sits in read(2) on fd 0 (`/proc/PID/syscall`).
fn wait_blocked_on_stdin(pid: u32) {
    common::wait_for(60, &format!("pid {pid} to block reading stdin"), || {
        let now = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
        now.starts_with("0 0x0 ").then_some(())
    });
}

/// Runs the shipped query `tool` (with `scope`, given the workload's pid,
/// appended) and `/usr/sbin/TOOL -p PID` around one pingpong run, each peer
/// tool alone beside its query: every further program on a tracepoint runs
/// between the two tools' clock reads and widens the buckets' disagreement.
fn compare(tool: &str, scope: &dyn Fn(u32) -> String, links: &[&str]) {
    let mut workload = Command::new(workload_bin())
        .args(["pingpong", "--rounds", "5000", "--pairs", "2", "--comm", "ebq-pingpong"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let tgid = workload.id();
    let mut lines = BufReader::new(workload.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "ready");
    wait_blocked_on_stdin(tgid);
    let peer = start_peer(tool, tgid);
    let sql = format!("{}{}", shipped_query(tool), scope(tgid));
    let prepared = engine().prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    let mut q = RunningQuery::start(&prepared, Scope::All).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    wait_for_links(peer.id(), links);

    workload.stdin.take().unwrap().write_all(b"g").unwrap();
    let mut outs = vec![];
    let deadline = Instant::now() + Duration::from_secs(120);
    while workload.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the workload did not finish");
        outs.extend(q.poll(Duration::from_millis(20)).unwrap());
    }
    assert!(workload.wait().unwrap().success());
    let report: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(report["rounds"], 5000, "{report}");
    outs.extend(q.finish().unwrap());
    let stats = q.stats().unwrap();
    let peer_missed = prog_recursion_misses(peer.id());
    let theirs = peer_slots(&stop_peer(peer));
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{tool}: {rows:?}");
    let ours = ebq_slots(rows[0].get("usecs"));
    assert_agree(&ours, &theirs, lost_beside_peer(&stats) + peer_missed, tool);
}

#[test]
fn runqlat_histogram_equals_libbpf_tools_runqlat_side_by_side() {
    compare(
        "runqlat",
        &|tgid| format!("\nWHERE q.tgid = {tgid}"),
        &["sched_wakeup", "sched_wakeup_new", "sched_switch"],
    );
}

#[test]
fn cpudist_histogram_equals_libbpf_tools_cpudist_side_by_side() {
    compare("cpudist", &|tgid| format!(" AND s.next.tgid = {tgid}"), &["sched_switch"]);
}
