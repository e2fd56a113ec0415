//! EXPLAIN ANALYZE: the plan, then what running it cost.

use ebq::runtime::ProgramStats;
use ebq::{PreparedQuery, QueryStats};
use std::fmt::Write;
use std::time::Duration;

/// The plan followed by measured costs (BPF statistics were on during the run):
/// rates over `elapsed` (the query's run), ebq's CPU as a share of `to_exit`
/// (the run, the sinks' last writes and the close: the CPU counts them too).
pub fn render(
    prepared: &PreparedQuery,
    stats: &QueryStats,
    programs: &[ProgramStats],
    elapsed: Duration,
    to_exit: Duration,
) -> String {
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut s = format!(
        "Plan:\n{}\nMeasured over {secs:.3} s:\n",
        prepared.physical.explain().lines().map(|l| format!("  {l}\n")).collect::<String>()
    );
    let per_s = |n: u64| n as f64 / secs;
    let _ = writeln!(
        s,
        "  events      {} seen ({:.0}/s), {} matched ({:.0}/s), {} dropped, {} missed{}",
        stats.seen,
        per_s(stats.seen),
        stats.matched,
        per_s(stats.matched),
        stats.dropped,
        stats.missed,
        if stats.out_of_scope > 0 {
            format!("; {} out of scope (left out by -p/-c/--cgroup, before WHERE)", stats.out_of_scope)
        } else {
            String::new()
        }
    );
    for p in programs {
        // A union has one query program per branch (ebq_query, ebq_query_1, …).
        let branches = prepared.physical.programs[0].branches.len();
        let what = match p.name.as_str() {
            "ebq_query" if branches > 0 => "[kernel] union branch 1".to_string(),
            "ebq_query" => "[kernel] query program".to_string(),
            n if n.starts_with("ebq_query_") => {
                format!("[kernel] union branch {}", &n["ebq_query_".len()..].parse::<usize>().map_or(0, |i| i + 1))
            }
            n if n.starts_with("ebq_pair_start") => "[kernel] JOIN start".to_string(),
            "ebq_forget_exit" => "[kernel] exit follower".to_string(),
            "ebq_follow_fork" => "[kernel] fork follower".to_string(),
            n => {
                let attach = prepared.programs.iter().flat_map(|p| &p.progs).find(|i| i.name == n).map(|i| &i.attach);
                match attach {
                    Some(ebq::codegen::AttachPoint::FaultCount(tp)) => format!("[kernel] page count at {tp}"),
                    _ => format!("[kernel] {n}"),
                }
            }
        };
        let avg = if p.run_cnt > 0 {
            format!("{:.1} ns/run", p.run_time_ns as f64 / p.run_cnt as f64)
        } else {
            "not run".into()
        };
        let _ = writeln!(
            s,
            "  {what:<24} {} runs, {:.3} ms in BPF, {avg}, {} missed",
            p.run_cnt,
            p.run_time_ns as f64 / 1e6,
            p.recursion_misses
        );
    }
    let _ = writeln!(
        s,
        "  [user] ebq process      {:.3} ms CPU ({:.2}% of one CPU){}",
        stats.user_cpu_ns as f64 / 1e6,
        stats.user_cpu_ns as f64 / 1e9 / to_exit.as_secs_f64().max(secs) * 100.0,
        if matches!(prepared.physical.programs[0].output, ebq::plan::KernelOutput::Rows { .. }) {
            format!(", {} rows delivered ({:.0}/s)", stats.delivered, per_s(stats.delivered))
        } else {
            String::new()
        }
    );
    s
}
