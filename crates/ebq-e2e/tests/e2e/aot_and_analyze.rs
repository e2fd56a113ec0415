//! Issue 4: ahead-of-time bundles run without clang; EXPLAIN ANALYZE measures.

use crate::common;

use common::{ebq_bin, workload_bin};
use std::process::Command;

#[test]
fn a_compiled_bundle_runs_with_clang_absent_from_path() {
    let dir = std::env::temp_dir().join(format!("ebq-aot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("q.ebq");
    let sql = "SELECT fd, COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-aot' GROUP BY fd";
    let out = Command::new(ebq_bin()).args(["compile", sql, "-o"]).arg(&bundle).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // A PATH with only /bin/sh's directory replaced by an empty one: no clang anywhere.
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let report = dir.join("r.json");
    let cmd = format!(
        "{} pread --fds 2 --calls 6,11 --fd-base 100 --comm ebq-aot --report {}",
        workload_bin().display(),
        report.display()
    );
    let rows = common::run_bundle_without_clang(&bundle, &empty, &cmd);
    let got: Vec<(u64, u64)> = rows.iter().map(|r| (r["fd"].as_u64().unwrap(), r["n"].as_u64().unwrap())).collect();
    assert_eq!(got, [(100, 6), (101, 11)]);

    // The same SQL run directly with that PATH needs clang and says so.
    let out = Command::new(ebq_bin()).env("PATH", &empty).env_remove("EBQ_CLANG").arg(sql).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("clang was not found"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bundle_for_a_missing_or_changed_event_fails_clearly() {
    let dir = std::env::temp_dir().join(format!("ebq-aot-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bundle = dir.join("q.ebq");
    let out = Command::new(ebq_bin())
        .args(["compile", "SELECT COUNT(*) FROM syscalls.sys_enter_pread64", "-o"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(out.status.success());
    // Pretend it was compiled on a kernel with another layout / another event.
    let bytes = std::fs::read(&bundle).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    for (from, to, message) in [
        ("offset:16;", "offset:24;", "changed since the query was compiled"),
        ("\"name\":\"sys_enter_pread64\"", "\"name\":\"sys_enter_nosuchx\"", "this kernel has no tracepoint"),
    ] {
        assert!(text.contains(from), "{from}");
        let patched = dir.join("patched.ebq");
        std::fs::write(&patched, replace_bytes(&bytes, from.as_bytes(), to.as_bytes())).unwrap();
        let out = Command::new(ebq_bin()).arg("run").arg(&patched).args(["--duration", "0.1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(message), "{err}");
    }
    std::fs::write(dir.join("junk.ebq"), b"not a bundle").unwrap();
    let out = Command::new(ebq_bin()).arg("run").arg(dir.join("junk.ebq")).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an ebq bundle"));
    let _ = std::fs::remove_dir_all(dir);
}

fn replace_bytes(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len(), "keep the header length");
    let i = hay.windows(from.len()).position(|w| w == from).unwrap();
    [&hay[..i], to, &hay[i + from.len()..]].concat()
}

#[test]
fn explain_analyze_reports_measured_costs() {
    let cmd = format!("{} readzero --count 200000 --comm ebq-analyze", workload_bin().display());
    let out = Command::new(ebq_bin())
        .args(["explain", "--analyze", "-c", &cmd])
        .arg("SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'ebq-analyze'")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[kernel] Filter"), "{text}");
    assert!(text.contains("200000 matched"), "{text}");
    let line = text.lines().find(|l| l.contains("[kernel] query program")).expect("a BPF cost line");
    let runs: u64 = line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert!(runs >= 200_000, "{line}");
    assert!(line.contains("ns/run"), "{line}");
}
