//! Empty results (issue 18 item 2): an ungrouped aggregate over a window where
//! nothing matches is one row, as SQL has it — COUNT and COUNT(DISTINCT) 0,
//! SUM/MAX/AVG/quantiles NULL (empty in tables and CSV, `null` in JSON), and
//! expressions over NULL NULL; a grouped aggregate with no groups stays empty.

use crate::common;

use common::ebq_bin;
use std::process::{Command, Output};

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
