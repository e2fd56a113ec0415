//! Per-CPU ring buffers for row queries (issue 16 item 6): with the rows of
//! threads pinned to CPU 0 and CPU 1, each row arrives through its CPU's own
//! ring, and every call the workload made is one row with its own CPU, thread
//! and fd — exactly as through one shared ring (`--rings shared`).

use crate::common;

use common::{rows_of, run_around_with, u};
use ebq::plan::PlanOptions;
use ebq::{Engine, Scope};
use std::collections::BTreeMap;

/// Two fds, each read by a thread pinned to CPU 0 and one pinned to CPU 1.
const PREAD: &[&str] = &["pread", "--fds", "2", "--calls", "3001,2000", "--fd-base", "100", "--threads-per-cpu"];

/// The workload's calls per (cpu, tid, fd), from its report.
fn calls_per_thread(report: &serde_json::Value) -> BTreeMap<(u64, u64, u64), u64> {
    let mut want = BTreeMap::new();
    for f in report["fds"].as_array().unwrap() {
        for t in f["per_cpu"].as_array().unwrap() {
            let key = (t["cpu"].as_u64().unwrap(), t["tid"].as_u64().unwrap(), f["fd"].as_u64().unwrap());
            *want.entry(key).or_default() += t["calls"].as_u64().unwrap();
        }
    }
    want
}

#[test]
fn rows_from_both_cpus_arrive_exactly_through_their_own_rings_as_through_a_shared_one() {
    let sql = "SELECT cpu, tid, fd, count FROM syscalls.sys_enter_pread64 WHERE fd >= 100";
    for per_cpu_rings in [true, false] {
        let engine = Engine::new().unwrap().with_options(PlanOptions { per_cpu_rings, ..PlanOptions::default() });
        let explain = engine.prepare(sql).unwrap().explain();
        assert_eq!(explain.contains("BPF_MAP_TYPE_ARRAY_OF_MAPS"), per_cpu_rings, "{explain}");
        let (outs, stats, report) = run_around_with(&engine, sql, Scope::Process, PREAD);
        let want = calls_per_thread(&report);
        assert_eq!(want.keys().map(|k| k.0).collect::<std::collections::BTreeSet<_>>().len(), 2, "{report}");
        assert_eq!(want.values().sum::<u64>(), 5001);
        let rows = rows_of(&outs);
        let mut got: BTreeMap<(u64, u64, u64), u64> = BTreeMap::new();
        for r in &rows {
            *got.entry((u(r, "cpu"), u(r, "tid"), u(r, "fd"))).or_default() += 1;
        }
        assert_eq!(got, want, "per_cpu_rings {per_cpu_rings}: {stats:?}");
        assert_eq!((stats.matched, stats.delivered, stats.dropped), (5001, 5001, 0), "{per_cpu_rings}");
    }
}

/// Each poll's rows come out in time order, although one consume drains CPU
/// 0's ring and then CPU 1's: with threads on both CPUs calling at once, a
/// poll holds rows of both, and a stream without ORDER BY still reads by time.
#[test]
fn a_plain_stream_with_time_is_time_ordered_within_each_poll_across_cpu_rings() {
    let sql = "SELECT time, cpu, tid, fd FROM syscalls.sys_enter_pread64 WHERE fd >= 100";
    let engine = Engine::new().unwrap().with_options(PlanOptions { per_cpu_rings: true, ..PlanOptions::default() });
    let (outs, stats, report) = run_around_with(&engine, sql, Scope::Process, PREAD);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 5001, "{stats:?}");
    assert_eq!((stats.matched, stats.delivered, stats.dropped), (5001, 5001, 0));
    let mut got: BTreeMap<(u64, u64, u64), u64> = BTreeMap::new();
    for r in &rows {
        *got.entry((u(r, "cpu"), u(r, "tid"), u(r, "fd"))).or_default() += 1;
    }
    assert_eq!(got, calls_per_thread(&report));
    // Polls that hold rows of both CPUs: the case the order is restored for.
    let mut mixed = 0;
    for w in 0..outs.len() as u64 {
        let poll: Vec<_> = rows.iter().filter(|r| u(r, "__window") == w).collect();
        let times: Vec<u64> = poll.iter().map(|r| u(r, "time")).collect();
        assert!(times.windows(2).all(|p| p[0] <= p[1]), "poll {w} out of time order: {times:?}");
        mixed += usize::from(poll.iter().map(|r| u(r, "cpu")).collect::<std::collections::BTreeSet<_>>().len() > 1);
    }
    assert!(mixed > 0, "no poll held rows of both CPUs ({} polls)", outs.len());
}
