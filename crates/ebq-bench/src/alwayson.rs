//! `ebq bench always-on`: what the shipped `deploy/ebq.toml`, served by
//! `ebq serve` the way a node runs it, costs a busy machine (issue 39 item 7).
//!
//! Two workloads run at once: fio 4 KiB psync randread on tmpfs, pinned to
//! the workload CPU, and `dd bs=1` from `/dev/zero`, pinned to the other
//! one. They run bare, then for the measured span under `ebq serve` (not
//! pinned, as a DaemonSet is not), then bare again; the loss is each
//! workload's rate under serve against the mean of its two bare runs. While
//! serve runs, its CPU time (all threads, `/proc/PID/task/*/schedstat`) and
//! RSS are sampled; at the end its own `/metrics` gives each query's in-BPF
//! time (`ebq_query_bpf_run_seconds_total` over `ebq_query_bpf_runs_total`,
//! the kernel's bpf_stats).

use super::{proc, table, Ctx};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The configuration a node gets: the file in the repository, built in.
const CONFIG: &str = include_str!("../../../deploy/ebq.toml");

/// What the two workloads did in one phase.
#[derive(Debug, Clone, Copy)]
struct Rates {
    /// fio's read IOPS.
    fio_iops: f64,
    /// dd's 1-byte reads per second (its bytes over its own elapsed time).
    dd_reads_per_s: f64,
    /// fio's reads and dd's, counted.
    fio_ios: f64,
    dd_reads: f64,
}

/// One sample of serve: seconds since the workloads started, its CPU time (s), its RSS (KiB).
type Sample = (f64, f64, u64);

/// The table's columns.
pub const HEADER: &[&str] = &["phase", "fio IOPS", "dd reads/s", "ebq CPU %", "ebq RSS KiB (max)"];

/// `dd … bs=1` statistics as GNU dd prints them at SIGUSR1: (bytes, seconds).
fn dd_stats(stderr: &str) -> Option<(f64, f64)> {
    let line = stderr.lines().find(|l| l.contains("bytes") && l.contains("copied"))?;
    let bytes = line.split_whitespace().next()?.parse().ok()?;
    let secs = line.split("copied, ").nth(1)?.split(' ').next()?.parse().ok()?;
    Some((bytes, secs))
}

/// The fio command: 4 KiB psync random reads of a 64 MiB file in `dir` for `secs`.
fn fio(ctx: &Ctx, dir: &Path, secs: u64) -> Command {
    let mut c = Command::new("taskset");
    c.args(["-c", &ctx.cpu.to_string(), "fio", "--name=alwayson", "--ioengine=psync", "--rw=randread", "--bs=4k"])
        .args(["--size=64m", "--time_based", "--clocksource=clock_gettime", "--output-format=json"])
        .arg(format!("--directory={}", dir.display()))
        .arg(format!("--runtime={secs}s"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs both workloads for `secs`, calling `sample` about every `every` meanwhile.
fn workloads(ctx: &Ctx, secs: u64, every: Duration, sample: &mut dyn FnMut(f64)) -> Result<Rates, String> {
    let dir = Path::new("/dev/shm").join(format!("ebq-bench-alwayson-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let dd = Command::new("taskset")
        .args(["-c", &ctx.tracer_cpu.to_string(), "dd", "if=/dev/zero", "of=/dev/null", "bs=1"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run dd: {e}"))?;
    let mut dd = Killed(dd);
    let fio = fio(ctx, &dir, secs).spawn().map_err(|e| format!("cannot run fio: {e}"))?;
    let t0 = Instant::now();
    let mut fio = Killed(fio);
    let mut next = every;
    while fio.0.try_wait().map_err(|e| e.to_string())?.is_none() {
        if t0.elapsed() >= next {
            sample(t0.elapsed().as_secs_f64());
            next += every;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SIGUSR1 makes dd print its statistics (SIGINT would too, but a shell
    // running the bench in the background has its children ignore SIGINT).
    // SAFETY: our own child.
    unsafe { libc::kill(dd.0.id() as libc::pid_t, libc::SIGUSR1) };
    std::thread::sleep(Duration::from_millis(200));
    let _ = dd.0.kill();
    let dd_out = dd.wait_output()?;
    let fio_out = fio.wait_output()?;
    let _ = std::fs::remove_dir_all(&dir);
    let run = super::fio::parse(&fio_out.0).map_err(|e| format!("{e}: {}", fio_out.1.trim()))?;
    let (bytes, dd_secs) = dd_stats(&dd_out.1).ok_or_else(|| format!("dd printed no statistics: {}", dd_out.1))?;
    Ok(Rates { fio_iops: run.ops, dd_reads_per_s: bytes / dd_secs.max(1e-9), fio_ios: run.ios, dd_reads: bytes })
}

/// A child killed if dropped before it was waited for.
struct Killed(Child);

impl Killed {
    /// Waits for it: (stdout, stderr).
    fn wait_output(mut self) -> Result<(String, String), String> {
        let mut out = String::new();
        let mut err = String::new();
        if let Some(mut o) = self.0.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        if let Some(mut e) = self.0.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        self.0.wait().map_err(|e| e.to_string())?;
        Ok((out, err))
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The shipped configuration with `/metrics` on `port`, and its number of queries.
fn config(port: u16) -> (String, usize) {
    let text: String = CONFIG
        .lines()
        .map(|l| if l.starts_with("listen = ") { format!("listen = \"127.0.0.1:{port}\"") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    let queries = CONFIG.lines().filter(|l| l.trim() == "[[query]]").count();
    (text + "\n", queries)
}

/// A free loopback port.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// `GET /metrics` on `port`: the page's body.
fn scrape(port: u16) -> Result<String, String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("/metrics: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| format!("/metrics: {e}"))?;
    let mut page = String::new();
    s.read_to_string(&mut page).map_err(|e| format!("/metrics: {e}"))?;
    let (head, body) = page.split_once("\r\n\r\n").ok_or("/metrics: no HTTP response")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return Err(format!("/metrics: {}", head.lines().next().unwrap_or("")));
    }
    Ok(body.to_string())
}

/// Each query's `metric` from a /metrics page, by its `query` label.
fn per_query(page: &str, metric: &str) -> Vec<(String, f64)> {
    page.lines()
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with('{'))
        .filter_map(|l| {
            let q = l.split("query=\"").nth(1)?.split('"').next()?.to_string();
            Some((q, l.rsplit(' ').next()?.parse().ok()?))
        })
        .collect()
}

/// Starts `ebq serve` on the shipped configuration and waits until every query is attached.
fn start_serve(ctx: &Ctx, port: u16) -> Result<(Killed, std::path::PathBuf), String> {
    let (text, queries) = config(port);
    let path = ctx.scratch.join("alwayson.toml");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = ctx.scratch.join("alwayson-serve.err");
    let child = Command::new(&ctx.ebq)
        .args(["serve", "--config"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).map_err(|e| e.to_string())?)
        .spawn()
        .map_err(|e| format!("cannot run ebq serve: {e}"))?;
    let mut serve = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        if text.matches("attached").count() >= queries {
            return Ok((serve, err));
        }
        if serve.0.try_wait().map_err(|e| e.to_string())?.is_some() || Instant::now() > deadline {
            return Err(format!("ebq serve did not attach its {queries} queries: {}", text.trim()));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let (secs, bare_secs, every) = if ctx.quick { (12, 6, 2) } else { (600, 60, 10) };
    let every = Duration::from_secs(every);
    let before = workloads(ctx, bare_secs, every, &mut |_| {})?;
    let port = free_port()?;
    let (serve, err) = start_serve(ctx, port)?;
    let pid = serve.0.id();
    let cpu0 = proc::threads_cpu_ns(pid);
    let mut samples: Vec<Sample> = vec![];
    let served = workloads(ctx, secs, every, &mut |t| {
        samples.push((t, proc::threads_cpu_ns(pid).saturating_sub(cpu0) as f64 / 1e9, proc::status_kb(pid, "VmRSS:")));
    })?;
    let page = scrape(port)?;
    // SAFETY: our own child: SIGINT stops serve as a node's shutdown does.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) };
    let _ = serve.wait_output();
    let after = workloads(ctx, bare_secs, every, &mut |_| {})?;
    let runs = per_query(&page, "ebq_query_bpf_runs_total");
    let seconds = per_query(&page, "ebq_query_bpf_run_seconds_total");
    let queries: Vec<Value> = runs
        .iter()
        .map(|(q, n)| {
            let s = seconds.iter().find(|(k, _)| k == q).map_or(0.0, |(_, s)| *s);
            json!({ "query": q, "bpf_runs": n, "bpf_seconds": s, "ns_per_run": if *n > 0.0 { s * 1e9 / n } else { 0.0 },
                    "cpu_pct": s / secs as f64 * 100.0 })
        })
        .collect();
    let bare = |f: fn(&Rates) -> f64| (f(&before) + f(&after)) / 2.0;
    let loss = |f: fn(&Rates) -> f64| 1.0 - f(&served) / bare(f);
    let (last_t, last_cpu) = samples.last().map_or((0.0, 0.0), |s| (s.0, s.1));
    let section = json!({
        "config": "deploy/ebq.toml",
        "seconds": secs,
        "bare_seconds": bare_secs,
        "workloads": "fio --ioengine=psync --rw=randread --bs=4k --size=64m on /dev/shm, pinned; dd if=/dev/zero of=/dev/null bs=1, pinned to the other CPU",
        "bare_before": { "fio_iops": before.fio_iops, "dd_reads_per_s": before.dd_reads_per_s },
        "served": { "fio_iops": served.fio_iops, "dd_reads_per_s": served.dd_reads_per_s,
                    "fio_ios": served.fio_ios, "dd_reads": served.dd_reads },
        "bare_after": { "fio_iops": after.fio_iops, "dd_reads_per_s": after.dd_reads_per_s },
        "loss": { "fio": loss(|r| r.fio_iops), "dd": loss(|r| r.dd_reads_per_s) },
        "ebq": {
            "cpu_pct": if last_t > 0.0 { last_cpu / last_t * 100.0 } else { 0.0 },
            "rss_kb_first": samples.first().map_or(0, |s| s.2),
            "rss_kb_max": samples.iter().map(|s| s.2).max().unwrap_or(0),
            "rss_kb_last": samples.last().map_or(0, |s| s.2),
            "samples": samples.iter().map(|s| json!([s.0, s.1, s.2])).collect::<Vec<_>>(),
            "stderr": std::fs::read_to_string(&err).unwrap_or_default().lines().take(20).collect::<Vec<_>>().join("\n"),
        },
        "queries": queries,
    });
    println!("{}", table::text(HEADER, &rows(&section)));
    println!("{}", table::text(QUERY_HEADER, &query_rows(&section)));
    Ok(section)
}

/// The phases' table.
pub fn rows(s: &Value) -> Vec<Vec<String>> {
    let phase = |key: &str, label: &str, ebq: bool| {
        let p = &s[key];
        let e = &s["ebq"];
        vec![
            label.to_string(),
            table::num(p["fio_iops"].as_f64(), 0),
            table::num(p["dd_reads_per_s"].as_f64(), 0),
            if ebq { table::num(e["cpu_pct"].as_f64(), 2) } else { "—".into() },
            if ebq { e["rss_kb_max"].to_string() } else { "—".into() },
        ]
    };
    let pct = |k: &str| s["loss"][k].as_f64().map_or("?".into(), |x| format!("{:.1} %", x * 100.0));
    vec![
        phase("bare_before", "bare (before)", false),
        phase("served", "under ebq serve", true),
        phase("bare_after", "bare (after)", false),
        vec!["loss".into(), pct("fio"), pct("dd"), "".into(), "".into()],
    ]
}

/// The per-query table's columns.
pub const QUERY_HEADER: &[&str] = &["query", "BPF runs", "in-BPF s", "ns/run", "% of one CPU"];

/// Each query's in-BPF time from /metrics.
pub fn query_rows(s: &Value) -> Vec<Vec<String>> {
    s["queries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|q| {
            vec![
                q["query"].as_str().unwrap_or("").to_string(),
                table::num(q["bpf_runs"].as_f64(), 0),
                table::num(q["bpf_seconds"].as_f64(), 3),
                table::num(q["ns_per_run"].as_f64(), 1),
                table::num(q["cpu_pct"].as_f64(), 3),
            ]
        })
        .collect()
}

/// The section of RESULTS.md, `run` (when and how it ran) under its heading.
pub fn markdown(s: &Value, run: &str) -> String {
    let mut md = String::from("\n## Always-on cost of the shipped configuration (`ebq bench always-on`)\n\n");
    md += run;
    md += &format!(
        "`ebq serve` with `{}` ({} s), between two bare runs of {} s each. Workloads at once: {}. Loss: the rate \
         under serve against the mean of the two bare runs. ebq's CPU: all its threads (schedstat) over the span, as \
         % of one CPU; RSS sampled every few seconds. In-BPF time: each query's `ebq_query_bpf_run_seconds_total` and \
         `ebq_query_bpf_runs_total` from its own /metrics at the end.\n\n",
        s["config"].as_str().unwrap_or(""),
        s["seconds"],
        s["bare_seconds"],
        s["workloads"].as_str().unwrap_or(""),
    );
    md += &table::markdown(HEADER, &rows(s));
    md += "\n";
    md += &table::markdown(QUERY_HEADER, &query_rows(s));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dd_statistics_and_metrics_are_read() {
        let err = "12345+0 records in\n12345+0 records out\n12345 bytes (12 kB, 12 KiB) copied, 2.5 s, 4.9 kB/s\n";
        assert_eq!(dd_stats(err), Some((12345.0, 2.5)));
        assert_eq!(dd_stats("dd: nothing"), None);
        let page = "# HELP x\nebq_query_bpf_runs_total{query=\"vfsstat\"} 1000\n\
                    ebq_query_bpf_run_seconds_total{query=\"vfsstat\",unit=\"s\"} 0.25\n";
        assert_eq!(per_query(page, "ebq_query_bpf_runs_total"), [("vfsstat".to_string(), 1000.0)]);
        assert_eq!(per_query(page, "ebq_query_bpf_run_seconds_total"), [("vfsstat".to_string(), 0.25)]);
        let (text, n) = config(4242);
        assert!(text.contains("listen = \"127.0.0.1:4242\"") && n == 6, "{n}\n{text}");
    }
}
