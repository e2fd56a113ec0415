//! Issue 20 item 4: `biolatency-flags` names requests as libbpf-tools
//! `biolatency -F` does (`Idle-Sync-Write`, `Sync-Read`, `PreFlush-Flush`),
//! decoded with this kernel's own enums. Both tools run side by side on a
//! private loop device; their per-flags counts must be equal, and add up to
//! the workload's own requests.

use crate::common;

use common::{ebq_bin, LoopDevice};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// The shipped query's SELECT, scoped to one disk as `biolatency -d DISK` is.
fn flags_sql(disk: &str) -> String {
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../queries/biolatency-flags.sql")).unwrap();
    let sql: Vec<&str> = shipped.lines().filter(|l| !l.starts_with("--")).collect();
    sql.join("\n").replace(
        "GROUP BY c.rq.cmd_flags;",
        &format!("WHERE c.rq.q.disk.disk_name = '{disk}' GROUP BY c.rq.cmd_flags;"),
    )
}

/// `flags = NAME` sections of `biolatency -F` and the counts under each.
fn peer_counts(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("flags = ") {
            current = Some(name.to_string());
            out.insert(name.to_string(), 0);
        } else if let (Some(name), Some((range, rest))) = (&current, line.split_once(':')) {
            if range.contains("->") {
                *out.get_mut(name).unwrap() += rest.split_whitespace().next().unwrap().parse::<u64>().unwrap();
            }
        }
    }
    out
}

#[test]
fn request_flags_equal_libbpf_tools_biolatency_f_side_by_side() {
    let disk = LoopDevice::new();
    let name = disk.name();
    let peer = Command::new("/usr/sbin/biolatency")
        .args(["-F", "-d", &name, "6", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("libbpf-tools biolatency (Debian libbpf-tools, installed by scripts/setup.sh)");
    let ebq = Command::new(ebq_bin())
        .args(["--duration", "6", "--format", "json", &flags_sql(&name)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both attached before any request: each tool's links are in its fdinfo
    // (a fixed 2 s sleep once let a loaded machine start the workload early).
    for pid in [peer.id(), ebq.id()] {
        common::wait_for_links(pid, &["block_rq_issue", "block_rq_complete"]);
    }
    // 300 direct writes and 40 direct reads, then 50 dsync writes (each also asks for a flush).
    disk.direct_requests();
    let dsync = ["if=/dev/zero".to_string(), format!("of={}", disk.dev.display()), "bs=4k".into(), "count=50".into()];
    let st = Command::new("dd").args(dsync).arg("oflag=direct,dsync").stderr(Stdio::null()).status().unwrap();
    assert!(st.success());
    let ours = ebq.wait_with_output().unwrap();
    let theirs = peer.wait_with_output().unwrap();
    assert!(ours.status.success(), "{}", String::from_utf8_lossy(&ours.stderr));
    // A histogram is one JSON line per bucket: (flags, lo, hi, count).
    let mut ours_counts: BTreeMap<String, u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&ours.stdout).lines() {
        let r: Json = serde_json::from_str(line).unwrap();
        *ours_counts.entry(r["flags"].as_str().unwrap().to_string()).or_default() += r["count"].as_u64().unwrap();
    }
    let stats = common::cli_stats(&String::from_utf8_lossy(&ours.stderr));
    let ours = ours_counts;
    let theirs = peer_counts(&String::from_utf8_lossy(&theirs.stdout));
    // The workload's own tally: 300 + 50 direct writes, 40 direct reads; each
    // dsync write also asks for a flush. Accounting (JOIN): each count + missed ends/starts +
    // open + superseded covers the tally; exact when none.
    let count = |flags: &str| ours.get(flags).copied().unwrap_or(0);
    common::assert_exact_or_accounted(count("Idle-Sync-Write"), 350, &stats, "Idle-Sync-Write vs dd");
    common::assert_exact_or_accounted(count("Sync-Read"), 40, &stats, "Sync-Read vs dd");
    // The peer reports no losses: when ebq lost nothing, both saw the same requests.
    if common::lost(&stats) == 0 {
        assert_eq!(ours, theirs, "per-flags request counts, ebq vs biolatency -F; {stats:?}");
    }
}
