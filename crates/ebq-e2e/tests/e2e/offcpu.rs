//! Issue 17: the shipped `offcputime` query (sched_switch paired with itself
//! through tp_btf: a thread's switch-out to its next switch-in).
//!
//! `sleep 0.25` blocks once in nanosleep: its timer expires at least 250 ms
//! after it was armed, and the time off CPU cannot exceed the wall time of
//! the whole run. The switch-out comes after the timer is armed, so an
//! interrupt between the two shortens the time off CPU by its length (a
//! loaded CI run measured 249,831 µs): the lower bound allows 1 ms for that.

use crate::common;

use std::process::Command;
use std::time::Instant;

#[test]
fn sleep_is_off_cpu_in_nanosleep_for_its_duration() {
    let t0 = Instant::now();
    let out = Command::new(common::ebq_bin())
        .args(["run", "offcputime", "-c", "/bin/sleep 0.25", "--format", "json"])
        .output()
        .unwrap();
    let wall_us = t0.elapsed().as_micros() as u64;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let nap: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["comm"] == "sleep" && r["kstack"].as_str().unwrap_or("").contains("do_nanosleep"))
        .collect();
    assert_eq!(nap.len(), 1, "{rows:#?}");
    assert_eq!(nap[0]["switches"].as_u64(), Some(1), "{rows:#?}");
    // Issue 40 item 7: the stack starts in the scheduler, not in ebq's program or
    // the tracepoint trampolines (bpf_prog_…, bpf_trace_run4, __traceiter_sched_switch).
    let first = nap[0]["kstack"].as_str().unwrap().split("; ").next().unwrap();
    assert!(!first.starts_with("bpf_") && !first.starts_with("__traceiter_"), "{first}");
    for r in &rows {
        let frames = r["kstack"].as_str().unwrap_or("");
        assert!(!frames.contains("bpf_prog_") && !frames.contains("__traceiter_"), "{frames}");
    }
    let off_us = nap[0]["off_us"].as_u64().unwrap();
    // 250 ms from the timer's arming, less what ran between arming and the switch-out (see above).
    assert!((249_000..wall_us).contains(&off_us), "{off_us} µs off CPU, run took {wall_us} µs");
}
