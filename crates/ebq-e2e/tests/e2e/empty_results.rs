//! Empty results (issue 18 item 2): an ungrouped aggregate over a window where
//! nothing matches is one row, as SQL has it — COUNT and COUNT(DISTINCT) 0,
//! SUM/MAX/AVG/quantiles NULL (empty in tables and CSV, `null` in JSON), and
//! expressions over NULL NULL; a grouped aggregate with no groups stays empty.
//!
//! Scope explains an empty answer (issue 35 item 7): block completions run in
//! a kworker or an interrupt, outside a `-c` command's processes, so the scope
//! leaves them out; the line after the stats says how many and names
//! `--system-wide`. Events of the command itself never get that line.

use crate::common;

use common::{ebq_bin, LoopDevice};
use std::process::{Command, Output, Stdio};

const NOTHING: &str = "FROM syscalls.sys_enter_read WHERE comm = 'ebq-no-such'";

fn ebq(args: &[&str]) -> Output {
    let out = Command::new(ebq_bin()).args(["--duration", "0.3"]).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text with every run of digits after `window_` keys / in window titles replaced by `N`.
fn mask_windows(text: &str) -> String {
    text.lines()
        .map(|l| {
            let mut out = String::new();
            let mut digits = false;
            for c in l.chars() {
                if c.is_ascii_digit() || (digits && c == '.') {
                    if !digits {
                        out.push('N');
                    }
                    digits = true;
                } else {
                    digits = false;
                    out.push(c);
                }
            }
            out + "\n"
        })
        .collect()
}

#[test]
fn an_ungrouped_aggregate_of_nothing_is_one_row_of_zeros_and_nulls() {
    let sql = format!("SELECT COUNT(*) AS n, COUNT(DISTINCT fd) AS fds, SUM(count) AS s, MAX(count) + 1 AS m, AVG(count) AS a, P99(count) AS p {NOTHING}");
    assert_eq!(
        mask_windows(&stdout(&ebq(&["--format", "json", &sql]))),
        "{\"window_start_ns\":N,\"window_end_ns\":N,\"window_start\":\"N-N-NTN:N:NZ\",\"window_end\":\"N-N-NTN:N:NZ\",\"n\":N,\"fds\":N,\"s\":null,\"m\":null,\"a\":null,\"p\":null}\n"
    );
    let json = stdout(&ebq(&["--format", "json", &sql]));
    let row: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!((row["n"].as_u64(), row["fds"].as_u64()), (Some(0), Some(0)));
    assert_eq!(
        mask_windows(&stdout(&ebq(&["--format", "csv", &sql]))),
        "window_start_ns,window_end_ns,window_start,window_end,n,fds,s,m,a,p\nN,N,N-N-NTN:N:NZ,N-N-NTN:N:NZ,N,N,,,,\n"
    );
    let table = stdout(&ebq(&[&sql]));
    assert_eq!(
        table,
        format!(
            "{}\n┌─────────────────────────┐\n│ n   fds   s   m   a   p │\n╞═════════════════════════╡\n│ 0     0                 │\n└─────────────────────────┘\n",
            table.lines().next().unwrap()
        )
    );
    assert!(table.starts_with("window 0.000s – 0.3"), "{table}");
}

#[test]
fn a_grouped_aggregate_of_nothing_stays_empty() {
    let out = ebq(&["--format", "json", &format!("SELECT comm, COUNT(*) AS n {NOTHING} GROUP BY comm")]);
    assert_eq!(stdout(&out), "");
}

#[test]
fn null_conditions_are_false_in_having() {
    let out = ebq(&["--format", "json", &format!("SELECT COUNT(*) AS n {NOTHING} HAVING MAX(count) > 0")]);
    assert_eq!(stdout(&out), "");
    let out = ebq(&["--format", "json", &format!("SELECT COUNT(*) AS n {NOTHING} HAVING COUNT(*) = 0")]);
    assert_eq!(mask_windows(&stdout(&out)), "{\"window_start_ns\":N,\"window_end_ns\":N,\"window_start\":\"N-N-NTN:N:NZ\",\"window_end\":\"N-N-NTN:N:NZ\",\"n\":N}\n");
}

/// The count the scope note gives: `all N …` or `N of M …`.
fn left_out(note: &str) -> u64 {
    let rest = note.strip_prefix("ebq: ").unwrap();
    let rest = rest.strip_prefix("all ").unwrap_or(rest);
    rest.split(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{note}"))
}

#[test]
fn block_completions_left_out_by_the_c_scope_are_counted_and_named() {
    let disk = LoopDevice::new();
    let cmd = format!("dd if=/dev/zero of={} bs=4k count=300 oflag=direct status=none", disk.dev.display());
    let sql = format!("SELECT COUNT(*) AS n FROM block.block_rq_complete WHERE dev = {}", disk.dev_t());
    let before = disk.writes();
    let out = Command::new(ebq_bin()).args(["-c", &cmd, "--format", "json", &sql]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(disk.writes() - before >= 300, "dd wrote 300 direct blocks");
    // The loop device completes its requests in its kworker: none is dd's.
    let row: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(row["n"], 0, "{stderr}");
    let note = stderr
        .lines()
        .find(|l| l.contains("--system-wide counts them"))
        .unwrap_or_else(|| panic!("no scope note: {stderr}"));
    assert!(
        note.contains(" block.block_rq_complete events fired outside the -c command's processes (interrupt or kworker context) and were left out"),
        "{note}"
    );
    // The scope check runs before WHERE: every device's completions count, at least dd's 300.
    assert!(left_out(note) >= 300, "{note}");
    // It follows the stats line.
    let stats_at = stderr.lines().position(|l| l.contains("events seen")).expect(&stderr);
    assert_eq!(stderr.lines().nth(stats_at + 1), Some(note), "{stderr}");
}

#[test]
fn events_of_the_command_itself_get_no_scope_note() {
    // Another process's writes, many more than the command's: the scope leaves them out by design.
    let mut other = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000", "status=none"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = Command::new(ebq_bin())
        .args(["explain", "--analyze", "-c", "sleep 0.3; dd if=/dev/zero of=/dev/null bs=4k count=30 status=none"])
        .arg("SELECT COUNT(*) AS n FROM syscalls.sys_enter_write")
        .output()
        .unwrap();
    let _ = other.kill();
    let _ = other.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("--system-wide"), "{stderr}");
    // The left-out writes were counted all the same (EXPLAIN ANALYZE's events line).
    let text = stdout(&out);
    let events = text.lines().find(|l| l.trim_start().starts_with("events ")).expect(&text);
    let n: u64 = events
        .split("; ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" out of scope (left out by -p/-c/--cgroup, before WHERE)"))
        .unwrap_or_else(|| panic!("{events}"))
        .parse()
        .unwrap();
    assert!(n > 0, "{events}");
}
