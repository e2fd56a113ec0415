//! Streamed rows in the terminal (issue 18 item 3): columns as wide as their
//! cells and under their headers, `--time relative|wall|raw`, stacks one frame
//! per line. Exact output, with the times (which vary) checked and masked.

use crate::common;

use common::{ebq_bin, workload_bin};
use std::process::Command;

const SQL: &str = "SELECT e.time, e.comm, e.filename, x.ret FROM syscalls.sys_enter_openat e \
                   JOIN syscalls.sys_exit_openat x ON e.tid = x.tid WHERE e.comm = 'ebq-table'";

/// ebq's table lines (the workload's JSON report left out) and the fd the
/// workload got for /etc/hostname.
fn table(extra: &[&str], sql: &str) -> (Vec<String>, i64) {
    let opens =
        format!("{} opens --comm ebq-table --paths /etc/hostname,/nonexistent/ebq-table", workload_bin().display());
    let out = Command::new(ebq_bin()).args(["-c", &opens]).args(extra).arg(sql).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = text.lines().find(|l| l.starts_with('{')).expect("the workload's report");
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    let fd = report["opens"][0]["ret"].as_i64().unwrap();
    (text.lines().filter(|l| !l.starts_with('{')).map(str::to_string).collect(), fd)
}

/// Replaces the first `width` characters (the time cell) with `T`s after `check` accepts them.
fn mask(line: &str, width: usize, check: impl Fn(&str) -> bool) -> String {
    let (time, rest) = line.split_at(width);
    assert!(check(time.trim()), "time cell `{time}` in `{line}`");
    format!("{}{rest}", "T".repeat(width))
}

#[test]
fn relative_times_line_up_under_their_headers() {
    let (lines, fd) = table(&[], SQL);
    let seconds = |t: &str| t.len() == 8 && t.parse::<f64>().is_ok_and(|s| (0.0..5.0).contains(&s));
    let rows: Vec<String> = lines[1..].iter().map(|l| mask(l, 8, seconds)).collect();
    assert_eq!(lines[0], "    time  comm       filename                ret");
    assert_eq!(
        rows,
        [
            format!("TTTTTTTT  ebq-table  /etc/hostname           {fd:>3}"),
            "TTTTTTTT  ebq-table  /nonexistent/ebq-table   -2".into()
        ]
    );
}

#[test]
fn raw_and_wall_times_are_as_wide_as_their_column() {
    let (lines, _) = table(&["--time", "raw"], SQL);
    let width = lines[1].find("  ebq-table").unwrap();
    assert_eq!(lines[0], format!("{:>width$}  comm       filename                ret", "time"));
    let ns = |t: &str| t.parse::<u64>().is_ok_and(|n| n > 1_000_000_000);
    assert!(lines[1..].iter().all(|l| ns(&l[..width])), "{lines:?}");

    let (lines, _) = table(&["--time", "wall"], SQL);
    let today = ebq::sink::iso_utc(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i128,
    );
    let iso = |t: &str| t.len() == 27 && t[..10] == today[..10] && t.ends_with('Z') && &t[10..11] == "T";
    let rows: Vec<String> = lines[1..].iter().map(|l| mask(l, 27, iso)).collect();
    assert_eq!(lines[0], format!("{:>27}  comm       filename                ret", "time"));
    assert_eq!(rows[1], format!("{}  ebq-table  /nonexistent/ebq-table   -2", "T".repeat(27)));
}

#[test]
fn stacks_print_one_frame_per_line_in_their_column() {
    let sql = "SELECT x.ret, x.kstack FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x \
               ON e.tid = x.tid WHERE e.comm = 'ebq-table'";
    let (lines, fd) = table(&[], sql);
    assert!(lines[0].starts_with("ret  kstack"), "{lines:?}");
    let frames: Vec<&str> = lines[1..].iter().map(|l| &l[5..]).collect();
    assert!(frames.iter().all(|f| !f.is_empty() && !f.contains("; ")), "{lines:?}");
    let firsts: Vec<&str> = lines[1..].iter().map(|l| &l[..5]).filter(|c| !c.trim().is_empty()).collect();
    assert_eq!(firsts, [format!("{fd:>3}  "), " -2  ".into()]);
    // Each row is more than one frame deep, so it spans more than one line.
    assert!(lines.len() > 1 + 2 * 2, "{lines:?}");
}
