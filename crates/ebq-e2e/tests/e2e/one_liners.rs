//! README's "bpftrace one-liners in ebq" table (issue 18 item 5), run: every
//! query in the table's ebq column runs for 1.5 s around a shell loop that
//! opens, fails to open, reads, writes, fsyncs to disk and execs, and must end
//! successfully with at least one result row. The table is parsed out of
//! README.md, so the documentation and this test cannot drift apart.

use crate::common;

use common::ebq_bin;
use std::process::{Command, Stdio};

/// The ebq queries of the README table, with their row numbers.
fn one_liners() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let section = readme.split("### bpftrace one-liners in ebq").nth(1).expect("the README section");
    let table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    table
        .skip(2) // header and separator
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let query = cells.last().unwrap().trim_matches('`');
            (cells[0].to_string(), query.to_string())
        })
        .collect()
}

#[test]
fn every_readme_one_liner_runs_and_gives_rows() {
    let queries = one_liners();
    assert_eq!(queries.len(), 23, "{queries:?}");
    let file = format!("/var/tmp/ebq-one-liners-{}", std::process::id());
    let script = format!(
        "while :; do cat /etc/hostname >/dev/null; cat /nonexistent/ebq-one-liners 2>/dev/null; \
         dd if=/dev/zero of={file} bs=64k count=16 conv=fsync status=none; sleep 0.05; done"
    );
    let mut workload = Command::new("sh").args(["-c", &script]).stdout(Stdio::null()).spawn().unwrap();
    let mut failures = vec![];
    for (n, sql) in &queries {
        let out = Command::new(ebq_bin()).args(["--duration", "1.5", "--format", "json", sql]).output().unwrap();
        let rows = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.starts_with('{')).count();
        if !out.status.success() || rows == 0 {
            failures.push(format!(
                "{n}: {sql}: {:?}, {rows} rows: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    workload.kill().unwrap();
    workload.wait().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
