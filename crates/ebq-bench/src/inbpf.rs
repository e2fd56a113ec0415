//! The kernel's own measure of a tracer's programs: BPF run-time statistics
//! (`run_time_ns` / `run_cnt` per program) over one extra workload run.
//!
//! dd's CPU time per read moves by 15–30 ns from run to run on a shared VM,
//! as much as a cheap program costs; the time spent inside the programs
//! themselves is measured by the kernel per run and is steady to about a
//! nanosecond. It leaves out the trigger (the tracepoint's dispatch), which
//! is the same for every tool, so it is the part a tool's code adds. The
//! statistics cost two clock reads per run, so the timed runs keep them off.

use super::proc::run_pinned;
use serde_json::Value;
use std::collections::HashMap;
use std::process::Command;

fn bpftool_json(args: &[&str]) -> Result<Value, String> {
    let out = Command::new("bpftool").arg("-j").args(args).output().map_err(|e| format!("cannot run bpftool: {e}"))?;
    serde_json::from_slice(&out.stdout).map_err(|e| format!("bpftool {}: {e}", args.join(" ")))
}

/// Programs the processes `own` attached (tracepoints, uprobes), by id.
fn attached_programs(own: &[u32]) -> Result<Vec<u64>, String> {
    let perf = bpftool_json(&["perf", "show"])?;
    let mut ids: Vec<u64> = perf
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["pid"].as_u64().is_some_and(|pid| own.contains(&(pid as u32))))
        .filter_map(|p| p["prog_id"].as_u64())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

/// (run_time_ns, run_cnt) of each program in `ids`.
fn run_stats(ids: &[u64]) -> Result<HashMap<u64, (u64, u64)>, String> {
    let progs = bpftool_json(&["prog", "show"])?;
    Ok(progs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            let id = p["id"].as_u64()?;
            ids.contains(&id)
                .then(|| (id, (p["run_time_ns"].as_u64().unwrap_or(0), p["run_cnt"].as_u64().unwrap_or(0))))
        })
        .collect())
}

/// What the programs of a tracer cost, by the kernel's statistics.
#[derive(Debug, Clone, Copy)]
pub struct InBpf {
    /// Per program its time per run, summed over the per-event programs.
    pub per_run: f64,
    /// Their whole time during the run ÷ the workload's events: a raw
    /// `sys_enter` program also runs (and returns at once) on every other
    /// system call, which its time per run averages in and this charges.
    pub per_event: f64,
}

/// Runs `argv` (issuing `events` events) once on `cpu` with BPF statistics
/// on, and returns the time spent in the programs of `own` that ran for at
/// least half the events (the per-event ones, not a fork follower). `None`
/// when none did (a tool that attached nothing measurable).
pub fn ns_per_event(cpu: usize, argv: &[String], own: &[u32], events: u64) -> Result<Option<InBpf>, String> {
    let ids = attached_programs(own)?;
    if ids.is_empty() {
        return Ok(None);
    }
    let _stats = ebq::runtime::enable_bpf_stats().map_err(|e| e.to_string())?;
    let before = run_stats(&ids)?;
    run_pinned(cpu, argv)?;
    let after = run_stats(&ids)?;
    let mut total: Option<InBpf> = None;
    for (id, (time, runs)) in after {
        let (t0, r0) = before.get(&id).copied().unwrap_or((0, 0));
        let (dt, dr) = (time.saturating_sub(t0), runs.saturating_sub(r0));
        if dr > 0 && dr >= events / 2 {
            let t = total.get_or_insert(InBpf { per_run: 0.0, per_event: 0.0 });
            t.per_run += dt as f64 / dr as f64;
            t.per_event += dt as f64 / events.max(1) as f64;
        }
    }
    Ok(total)
}
