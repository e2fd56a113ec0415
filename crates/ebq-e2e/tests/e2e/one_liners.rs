//! The one-liner tables, run (issue 18 item 5, issue 36 item 6): the book's
//! "bpftrace one-liners in ebq" chapter (`docs/src/one-liners.md`) and the
//! README's one-liners. Every query in a table's last column runs for 1.5 s
//! around a shell loop that opens, fails to open, reads, writes, fsyncs to
//! disk and execs, and must end successfully with at least one result row (a
//! row whose cell gives options first, `--format flamegraph -o FILE 'SQL'`,
//! runs with them and must draw at least one stack).
//! The tables are parsed out of the documents, so they and this test cannot
//! drift apart. (Every other SQL example of the book is planned by `book.rs`.)

use crate::common;

use common::ebq_bin;
use std::process::{Command, Stdio};

/// One row of a one-liner table: its first cell, the options its last cell
/// puts before the quoted query (`--format flamegraph -o flame.svg 'SELECT …'`;
/// none: the cell is the bare query), and the query.
struct OneLiner {
    name: String,
    options: Vec<String>,
    sql: String,
}

/// The rows of the first table after `heading` in `doc` (a path from the
/// repository's root).
fn table(doc: &str, heading: &str) -> Vec<OneLiner> {
    let path = format!("{}/../../{doc}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let section = text.split(heading).nth(1).unwrap_or_else(|| panic!("{doc}: no `{heading}`"));
    let table = section.lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|'));
    table
        .skip(2) // header and separator
        .map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            let cell = cells.last().unwrap().trim_matches('`');
            let (options, sql) = match cell.strip_prefix("--") {
                Some(_) => {
                    let (options, quoted) = cell.split_once(" '").unwrap_or_else(|| panic!("{doc}: {cell}"));
                    (options.split_whitespace().map(String::from).collect(), quoted.trim_end_matches('\''))
                }
                None => (vec![], cell),
            };
            OneLiner { name: format!("{doc} {}", cells[0]), options, sql: sql.to_string() }
        })
        .collect()
}

/// The book's 23 bpftrace one-liners and the README's own.
fn one_liners() -> Vec<OneLiner> {
    let book = table("docs/src/one-liners.md", "# bpftrace one-liners in ebq");
    assert_eq!(book.len(), 23, "{:?}", book.iter().map(|o| &o.sql).collect::<Vec<_>>());
    let readme = table("README.md", "## One-liners");
    assert!(readme.len() >= 13, "{:?}", readme.iter().map(|o| &o.sql).collect::<Vec<_>>());
    let mut all = book;
    for o in readme {
        if !all.iter().any(|b| b.sql == o.sql && b.options == o.options) {
            all.push(o);
        }
    }
    all
}

/// Runs `o` for 1.5 s: its JSON rows, or with its own options (`-o FILE`
/// rewritten to a file in `dir`) that file's text. Err: what failed.
fn run(o: &OneLiner, dir: &std::path::Path) -> Result<String, String> {
    let mut args: Vec<String> = vec!["--duration".into(), "1.5".into()];
    let mut file = None;
    if o.options.is_empty() {
        args.extend(["--format".into(), "json".into()]);
    }
    let mut options = o.options.iter();
    while let Some(option) = options.next() {
        args.push(option.clone());
        if option == "-o" {
            let f = dir.join(options.next().unwrap_or_else(|| panic!("{}: -o without a file", o.name)));
            args.push(f.display().to_string());
            file = Some(f);
        }
    }
    let out = Command::new(ebq_bin()).args(&args).arg(&o.sql).output().unwrap();
    if !out.status.success() {
        return Err(format!("{:?}: {}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    match file {
        Some(f) => std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display())),
        None => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
    }
}

/// The results in `output` of a one-liner run with `options`: JSON rows, or
/// the stacks a flame graph draws (frames other than its root `all`).
fn results(options: &[String], output: &str) -> usize {
    let flamegraph = options.windows(2).any(|w| w[0] == "--format" && w[1] == "flamegraph");
    match flamegraph {
        // A run with no stacks draws one frame, `(none)`.
        true if output.contains("(none)") => 0,
        true => output.matches("<title>").count().saturating_sub(1),
        false => output.lines().filter(|l| l.starts_with('{')).count(),
    }
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
    let dir = std::env::temp_dir().join(format!("ebq-one-liners-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = vec![];
    for o in &queries {
        match run(o, &dir).map(|output| results(&o.options, &output)) {
            Ok(0) => failures.push(format!("{}: {:?} {}: no results", o.name, o.options, o.sql)),
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {:?} {}: {e}", o.name, o.options, o.sql)),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    workload.kill().unwrap();
    workload.wait().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
