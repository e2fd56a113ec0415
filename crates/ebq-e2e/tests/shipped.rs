//! Issue 3: every shipped query (`ebq queries`) runs by name around a
//! workload that exercises it and produces rows; syscount's counts include
//! the workload's exactly known reads.

mod common;

use common::{ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::process::Command;

fn json_lines(stdout: &[u8]) -> Vec<Json> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The names `ebq queries` lists.
fn shipped_names() -> Vec<String> {
    let out = Command::new(ebq_bin()).arg("queries").output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .take_while(|l| !l.is_empty())
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
    // Direct I/O on the disk (block queries), plus reads, writes, opens and fsyncs (syscall queries).
    let cmd = format!(
        "dd if=/dev/zero of={f} bs=4k count=200 oflag=direct,dsync status=none && \
         dd if={f} of=/dev/null bs=4k iflag=direct status=none && sync {f} && \
         {w} readzero --count 300 --report {f}.json",
        f = file.display(),
        w = workload_bin().display()
    );
    for name in &names {
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
