//! Issue 3: every shipped query (`ebq queries`) runs by name around a
//! workload that exercises it and produces rows; syscount's counts include
//! the workload's exactly known reads.

use crate::common;

use common::{ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::process::Command;

fn json_lines(stdout: &[u8]) -> Vec<Json> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The names `ebq queries` lists (a description wraps onto indented lines of its own).
fn shipped_names() -> Vec<String> {
    let out = Command::new(ebq_bin()).arg("queries").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with(' '))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Runs a shipped query around `cmd` (system-wide while it runs, so block
/// completions and kernel threads count) and returns its JSON rows.
fn run(name: &str, cmd: &str, extra: &[&str]) -> Vec<Json> {
    let out = Command::new(ebq_bin())
        .args(["run", name, "-c", cmd, "--system-wide", "--format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    json_lines(&out.stdout)
}

#[test]
fn every_shipped_query_runs_and_produces_rows() {
    let names = shipped_names();
    assert!(names.len() >= 9, "{names:?}");
    let file = std::env::temp_dir().join(format!("ebq-shipped-{}.dat", std::process::id()));
    // Direct I/O on the disk (block queries), plus reads, writes, opens and fsyncs (syscall
    // queries), and a buffered read of the file dropped from the cache (page-cache queries).
    let cmd = format!(
        "dd if=/dev/zero of={f} bs=4k count=200 oflag=direct,dsync status=none && \
         dd if={f} of=/dev/null bs=4k iflag=direct status=none && sync {f} && \
         dd if={f} iflag=nocache count=0 status=none && dd if={f} of=/dev/null bs=4k status=none && \
         {w} readzero --count 300 --report {f}.json",
        f = file.display(),
        w = workload_bin().display()
    );
    for name in &names {
        // PostgreSQL's probes need a PostgreSQL workload: tests/postgres.rs runs
        // pg-relation-reads around one and checks its counts exactly.
        if name == "pg-relation-reads" {
            continue;
        }
        // fsslower's default threshold (10 ms) may or may not be reached: report every call.
        let extra: &[&str] = if name == "fsslower" { &["--set", "min_us=0"] } else { &[] };
        let rows = run(name, &cmd, extra);
        assert!(!rows.is_empty(), "{name} gave no rows");
    }
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(file.with_extension("dat.json"));
}

#[test]
fn syscount_counts_the_workloads_reads_and_takes_parameters() {
    let report = std::env::temp_dir().join(format!("ebq-syscount-{}.json", std::process::id()));
    let cmd =
        format!("{} readzero --count 5000 --comm ebq-syscount --report {}", workload_bin().display(), report.display());
    let out = Command::new(ebq_bin())
        .args(["run", "syscount", "-c", &cmd, "--format", "json", "--set", "top=3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 3, "LIMIT {{top}} = 3: {rows:?}");
    let read = rows.iter().find(|r| r["syscall"] == "read").unwrap_or_else(|| panic!("{rows:?}"));
    // 5000 reads of /dev/zero, plus the few the dynamic loader makes before main.
    let n = read["count"].as_u64().unwrap();
    assert!((5000..5020).contains(&n), "{n}");
    assert_eq!(rows[0]["syscall"], "read", "most frequent first: {rows:?}");
    let _ = std::fs::remove_file(&report);
}

#[test]
fn unknown_names_and_parameters_are_explained() {
    let out = Command::new(ebq_bin()).args(["run", "biolatncy"]).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("neither a file nor a shipped query") && err.contains("biolatency"), "{err}");
    let out = Command::new(ebq_bin()).args(["run", "syscount", "--set", "nope=1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no parameter `nope`") && err.contains("top"), "{err}");
}

/// Issue 20 item 5: `--interval` on a shipped bcc-style query prints each
/// interval's own counts (the tool resets each interval), so the intervals
/// add up to the whole run instead of repeating running totals; and syscount
/// counts completed calls (sys_exit), so the final exit_group is not listed.
#[test]
fn shipped_tools_reset_each_interval_and_count_completed_calls() {
    let report = std::env::temp_dir().join(format!("ebq-syscount-interval-{}.json", std::process::id()));
    // 60 pread64 calls 20 ms apart: about 1.2 s, several 200 ms intervals.
    let cmd = format!(
        "{} pread --fds 1 --calls 60 --gap-us 20000 --comm ebq-interval --report {}",
        workload_bin().display(),
        report.display()
    );
    let preads = |rows: &[Json]| -> Vec<u64> {
        rows.iter().filter(|r| r["syscall"] == "pread64").map(|r| r["count"].as_u64().unwrap()).collect()
    };
    let whole = Command::new(ebq_bin())
        .args(["run", "syscount", "-c", &cmd, "--format", "json", "--set", "top=50"])
        .output()
        .unwrap();
    assert!(whole.status.success(), "{}", String::from_utf8_lossy(&whole.stderr));
    let whole = json_lines(&whole.stdout);
    let total = preads(&whole);
    assert_eq!(total.len(), 1, "{whole:?}");
    // 60 by the workload, plus the dynamic loader's few before main.
    assert!((60..70).contains(&total[0]), "{total:?}");
    assert!(whole.iter().all(|r| r["syscall"] != "exit_group"), "exit_group never completes: {whole:?}");

    let out = Command::new(ebq_bin())
        .args(["run", "syscount", "-c", &cmd, "--format", "json", "--set", "top=50", "--interval", "200ms"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = json_lines(&out.stdout);
    let per_interval = preads(&rows);
    assert!(per_interval.len() >= 3, "several intervals saw pread64 calls: {rows:?}");
    assert_eq!(per_interval.iter().sum::<u64>(), total[0], "intervals add up to the whole run: {per_interval:?}");
    assert!(per_interval.iter().all(|&n| n < total[0]), "no interval repeats the running total: {per_interval:?}");
    let err = Command::new(ebq_bin())
        .args(["run", "vfsstat", "--interval", "1s", "--set", "interval_ms=500", "--duration", "1"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&err.stderr).contains("give one"), "{err:?}");
    let _ = std::fs::remove_file(&report);
}

/// Issue 20 item 4: biolatency and biolatency-disk pair issue and completion on the
/// request itself (tp_btf, as libbpf-tools does) and time every request of a
/// private loop device: as many as its /sys/block/loopN/stat counts.
#[test]
fn biolatency_pairs_on_the_request_and_times_every_request() {
    for (name, scope, group) in
        [("biolatency", "i.rq.q.disk.disk_name", None), ("biolatency-disk", "c.rq.q.disk.disk_name", Some("disk"))]
    {
        let disk = common::LoopDevice::new();
        // eBQL takes clauses in any order after SELECT: WHERE may follow GROUP BY.
        let sql = format!("{}\nWHERE {scope} = '{}'", common::shipped_query(name), disk.name());
        let prepared = common::engine().prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
        assert!(prepared.explain().contains("i.rq = c.rq") && prepared.explain().contains("tp_btf"), "{name}");
        let (outs, stats, (requests, _)) = disk.traced_direct_io(prepared);
        let rows = common::rows_of(&outs);
        assert_eq!(rows.len(), 1, "{name}: {rows:?}");
        if let Some(col) = group {
            assert_eq!(common::s(&rows[0], col), disk.name());
        }
        // Accounting (JOIN, tp_btf): timed + missed ends/starts + open + superseded cover the
        // device's requests; exact when none.
        common::assert_exact_or_accounted(common::hist_total(&rows[0], "usecs"), requests, &stats, name);
        assert_eq!(stats.pending_full, 0, "{name}: {stats:?}");
    }
}
