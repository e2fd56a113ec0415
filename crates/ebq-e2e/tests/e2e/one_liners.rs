//! The one-liner tables, run (issue 18 item 5, issue 36 item 6): the book's
//! "bpftrace one-liners in ebq" chapter (`docs/src/one-liners.md`) and the
//! README's one-liners. Every query in a table's last column runs for 1.5 s
//! around a shell loop that opens, fails to open, reads, writes, fsyncs to
//! disk and execs, and must end successfully with at least one result row.
//! The tables are parsed out of the documents, so they and this test cannot
//! drift apart. (Every other SQL example of the book is planned by `book.rs`.)

use crate::common;

use common::ebq_bin;
use std::process::{Command, Stdio};

/// The queries of the first table after `heading` in `doc` (a path from the
/// repository's root), with their first cells.
fn table(doc: &str, heading: &str) -> Vec<(String, String)> {
    let path = format!("{}/../../{doc}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let section = text.split(heading).nth(1).unwrap_or_else(|| panic!("{doc}: no `{heading}`"));
    let table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    table
        .skip(2) // header and separator
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let query = cells.last().unwrap().trim_matches('`');
            (format!("{doc} {}", cells[0]), query.to_string())
        })
        .collect()
}

/// The book's 23 bpftrace one-liners and the README's own.
fn one_liners() -> Vec<(String, String)> {
    let book = table("docs/src/one-liners.md", "# bpftrace one-liners in ebq");
    assert_eq!(book.len(), 23, "{book:?}");
    let readme = table("README.md", "## One-liners");
    assert!(readme.len() >= 10, "{readme:?}");
    let mut all = book;
    for (n, q) in readme {
        if !all.iter().any(|(_, b)| *b == q) {
            all.push((n, q));
        }
    }
    all
}

#[test]
fn every_one_liner_of_the_book_and_the_readme_runs_and_gives_rows() {
    let queries = one_liners();
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
