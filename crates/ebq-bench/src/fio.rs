//! One fio run of `ebq bench stages` and the figures it reports: throughput
//! (seed 000's T) and the CPU its jobs spent per I/O.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// A fio workload: file system, block size, job count.
pub struct Workload {
    /// "tmpfs" or "disk".
    pub fs: &'static str,
    /// Directory holding the job files.
    pub dir: PathBuf,
    /// Block size, fio syntax ("4k").
    pub bs: &'static str,
    /// Jobs (processes) running at once.
    pub jobs: u32,
}

impl Workload {
    /// "tmpfs bs=4k jobs=1".
    pub fn id(&self) -> String {
        format!("{} bs={} jobs={}", self.fs, self.bs, self.jobs)
    }
}

/// What one fio run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct FioRun {
    /// Read + write bytes/s.
    pub bw: f64,
    /// Read + write operations/s.
    pub ops: f64,
    /// Read + write operations completed.
    pub ios: f64,
    /// The jobs' user + system CPU time (getrusage in each job): the BPF
    /// programs run inside their read/write syscalls, so in-kernel stage
    /// costs land here, whether or not another process steals the CPU.
    pub cpu_ns: f64,
    /// That CPU time as a share of the jobs' runtime (%): below 100 on tmpfs,
    /// other processes took the CPU from fio, and throughput fell for it.
    pub cpu_pct: f64,
}

/// The fixed part of every fio command line (also printed in the report).
pub const ARGS: [&str; 8] = [
    "--name=ebqbench",
    "--ioengine=sync",
    "--rw=randrw",
    "--rwmixread=50",
    "--time_based",
    "--group_reporting",
    // No TSC calibration at start-up: it costs ~0.1 s per run and nothing here needs it.
    "--clocksource=clock_gettime",
    // Job i runs on CPU i mod N: the same placement in every run.
    "--cpus_allowed_policy=split",
];

/// Runs fio for `runtime_ms` on files of `size`, its jobs spread over `cpus`.
pub fn run(w: &Workload, runtime_ms: u64, size: &str, cpus: usize) -> Result<FioRun, String> {
    let out = Command::new("fio")
        .args(ARGS)
        .arg(format!("--cpus_allowed=0-{}", cpus.max(1) - 1))
        .arg(format!("--directory={}", w.dir.display()))
        .arg(format!("--bs={}", w.bs))
        .arg(format!("--numjobs={}", w.jobs))
        .arg(format!("--size={size}"))
        .arg(format!("--runtime={runtime_ms}ms"))
        .arg("--output-format=json")
        .output()
        .map_err(|e| format!("error: cannot run fio: {e}"))?;
    if !out.status.success() {
        return Err(format!("error: fio failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// fio's JSON output (after any notes it prints first) → the figures.
pub(crate) fn parse(text: &str) -> Result<FioRun, String> {
    let start = text.find('{').ok_or("error: fio printed no JSON")?;
    let j: Value = serde_json::from_str(&text[start..]).map_err(|e| format!("error: fio JSON: {e}"))?;
    let job = &j["jobs"][0];
    let f = |side: &str, k: &str| job[side][k].as_f64().unwrap_or(0.0);
    // With group_reporting, job_runtime is the jobs' summed runtime (ms) and
    // usr_cpu/sys_cpu are percentages of it.
    let runtime_ns = job["job_runtime"].as_f64().unwrap_or(0.0) * 1e6;
    let cpu_pct = job["usr_cpu"].as_f64().unwrap_or(0.0) + job["sys_cpu"].as_f64().unwrap_or(0.0);
    Ok(FioRun {
        bw: f("read", "bw_bytes") + f("write", "bw_bytes"),
        ops: f("read", "iops") + f("write", "iops"),
        ios: f("read", "total_ios") + f("write", "total_ios"),
        cpu_ns: cpu_pct / 100.0 * runtime_ns,
        cpu_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_from_fio_json() {
        let text = "note: something\n{\"jobs\":[{\"job_runtime\":600,\"usr_cpu\":10.0,\"sys_cpu\":40.0,\
            \"read\":{\"bw_bytes\":1000,\"iops\":10.5,\"total_ios\":100},\
            \"write\":{\"bw_bytes\":500,\"iops\":4.5,\"total_ios\":50}}]}";
        let r = parse(text).unwrap();
        assert_eq!((r.bw, r.ops, r.ios), (1500.0, 15.0, 150.0));
        assert!((r.cpu_ns - 300e6).abs() < 1.0, "{}", r.cpu_ns);
        assert_eq!(r.cpu_pct, 50.0);
        assert!(parse("no json").is_err());
    }
}
