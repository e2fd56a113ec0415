//! Keyless aggregates (no GROUP BY, no WINDOW) keep their one group in slot 0
//! of a per-CPU array instead of a one-entry hash: the plan and the loaded map
//! say so, and the results are exact — merged across both CPUs (each CPU's
//! slot starts zeroed, so MIN/MAX must initialise per CPU), running snapshots
//! included, quantile sketches still attached to the group, and a run without
//! matching events prints no row, as the hash did.

use crate::common;

use common::{ebq_bin, engine, rows_of, u, workload_bin, Row, Workload};
use ebq::hist::{self, Bucket};
use ebq::runtime::Value;
use ebq::{RunningQuery, Scope};
use std::collections::BTreeMap;
use std::process::Command;

/// One cycle of sizes per fd: with `--threads-per-cpu` and 6 calls per fd the
/// thread on CPU 0 issues 50, 7, 900 and the one on CPU 1 issues 3, 1200, 40,
/// so the MIN and the MAX each come from a different CPU than the first event.
const SIZES: &[u64] = &[50, 7, 900, 3, 1200, 40];
const FDS: u64 = 2;

const SQL: &str = "SELECT COUNT(*) AS n, SUM(count) AS s, MIN(count) AS mn, MAX(count) AS mx, AVG(count) AS a, \
                   HIST(count) AS h, P50(count) AS p FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'";

fn sizes_arg() -> String {
    SIZES.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",")
}

fn workload_args(comm: &str) -> Vec<String> {
    let calls = vec![SIZES.len().to_string(); FDS as usize].join(",");
    let sizes = sizes_arg();
    ["pread", "--fds", "2", "--calls", &calls, "--sizes", &sizes, "--threads-per-cpu", "--comm", comm]
        .into_iter()
        .chain(["--fd-base", "100"])
        .map(str::to_string)
        .collect()
}

/// Every pread64 count the workload issues.
fn issued() -> Vec<u64> {
    (0..FDS).flat_map(|_| SIZES.iter().copied()).collect()
}

fn hist_of(row: &Row, col: &str) -> Vec<Bucket> {
    match row.get(col) {
        Some(Value::Hist(b)) => b.clone(),
        other => panic!("column {col}: expected a histogram, got {other:?}"),
    }
}

/// HIST buckets of `values`, first to last non-empty, gaps included (as ebq prints them).
fn log2_buckets(values: &[u64]) -> Vec<Bucket> {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for v in values {
        *counts.entry(hist::hist_index(*v)).or_default() += 1;
    }
    let (first, last) = (*counts.keys().next().unwrap(), *counts.keys().next_back().unwrap());
    (first..=last)
        .map(|i| {
            let (lo, hi) = hist::hist_bounds(i, false);
            Bucket { lo, hi, count: counts.get(&i).copied().unwrap_or(0) }
        })
        .collect()
}

fn check_exact(row: &Row) {
    let v = issued();
    let sum: u64 = v.iter().sum();
    assert_eq!(u(row, "n"), v.len() as u64, "{row:?}");
    assert_eq!(u(row, "s"), sum);
    assert_eq!(u(row, "mn"), 3, "the MIN comes from CPU 1");
    assert_eq!(u(row, "mx"), 1200, "the MAX comes from CPU 1");
    assert_eq!(row["a"], Value::F(sum as f64 / v.len() as f64));
    assert_eq!(hist_of(row, "h"), log2_buckets(&v));
    // The median (40 or 50, both below 92, where the sketch is exact): the
    // sketch keys on the group, which for one slot is the all-zero ebq_key.
    let mut exact: Vec<i128> = v.iter().map(|&x| i128::from(x)).collect();
    let want = hist::exact_quantile(&mut exact, 500_000).unwrap();
    assert_eq!(i128::from(u(row, "p")), want);
}

#[test]
fn a_keyless_aggregate_uses_one_array_slot_and_is_exact_on_both_cpus() {
    let comm = format!("slot{}", std::process::id() % 100_000);
    let sql = SQL.replace("{comm}", &comm);
    let prepared = engine().prepare(&sql).unwrap();
    let explain = prepared.explain();
    assert!(explain.contains("keys=[] values=[count, SUM(count), MIN(count), MAX(count)"), "{explain}");
    assert!(explain.contains("in PERCPU_ARRAY ebq_groups, 1 slot (no GROUP BY, no window;"), "{explain}");
    assert!(explain.contains("bpf_map_lookup_elem(&ebq_groups, &zero)"), "{explain}");
    // A grouped query keeps the hash.
    let grouped = engine().prepare("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd").unwrap();
    assert!(grouped.explain().contains("in PERCPU_HASH ebq_groups"));

    let args = workload_args(&comm);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = Workload::start(&args);
    let mut q = RunningQuery::start(&prepared, Scope::Process(w.pid())).unwrap();
    // Before any event the slot exists with count 0 on every CPU: as with the hash, the
    // one row of an ungrouped aggregate over nothing (COUNT 0, the rest NULL; issue 18).
    let empty = rows_of(&[q.snapshot().unwrap()]);
    assert_eq!(empty.len(), 1, "{empty:?}");
    assert_eq!(
        (&empty[0]["n"], &empty[0]["mn"], &empty[0]["p"]),
        (&Value::U(0), &Value::Null, &Value::Null),
        "{empty:?}"
    );
    w.go();
    let report = w.report();
    assert_eq!(report["total_calls"].as_u64(), Some(issued().len() as u64));
    // A running snapshot (--interval, ebq serve) reads the slot without clearing it.
    let snap = q.snapshot().unwrap();
    assert!(snap.partial);
    let snap_rows = rows_of(&[snap]);
    assert_eq!(snap_rows.len(), 1);
    check_exact(&snap_rows[0]);
    let outs = q.finish().unwrap();
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    check_exact(&rows[0]);
    let stats = q.stats().unwrap();
    assert_eq!((stats.matched, stats.dropped), (issued().len() as u64, 0));
}

#[test]
fn a_keyless_aggregate_without_matching_events_prints_one_row_of_zero_and_nulls() {
    // Events arrive (the workload's preads) but none matches: every CPU's slot stays at count 0,
    // and the window is SQL's one row of an ungrouped aggregate over nothing (issue 18).
    let comm = format!("slotz{}", std::process::id() % 100_000);
    let sql = "SELECT COUNT(*) AS n, MIN(count) AS mn, MAX(count) AS mx, AVG(count) AS a, HIST(count) AS h \
               FROM syscalls.sys_enter_pread64 WHERE comm = 'no-such-comm'";
    let args = workload_args(&comm);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let w = Workload::start(&args);
    let mut q = RunningQuery::start(&engine().prepare(sql).unwrap(), Scope::Process(w.pid())).unwrap();
    w.go();
    w.report();
    assert_eq!(q.snapshot().unwrap().batch.num_rows(), 1);
    let outs = q.finish().unwrap();
    assert_eq!(outs.len(), 1, "one final window");
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let cells: Vec<&Value> = ["n", "mn", "mx", "a", "h"].iter().map(|c| &rows[0][*c]).collect();
    assert_eq!(cells, [&Value::U(0), &Value::Null, &Value::Null, &Value::Null, &Value::Hist(vec![])]);
    let stats = q.stats().unwrap();
    assert_eq!(stats.matched, 0);
    assert!(stats.seen >= issued().len() as u64, "{stats:?}");
}

/// `--pin`: the pinned group map is a one-entry per-CPU array keyed by __u32 0,
/// the header says so, and an external libbpf reader (bpftool) reads the exact
/// counts from it after ebq exits (--keep-pins).
#[test]
fn a_pinned_keyless_aggregate_is_a_one_slot_array_for_external_readers() {
    let dir = std::path::PathBuf::from(format!("/sys/fs/bpf/ebq-test/slot-{}", std::process::id()));
    let header = std::env::temp_dir().join(format!("ebq-slot-{}.h", std::process::id()));
    let comm = format!("slotp{}", std::process::id() % 100_000);
    let workload = format!("{} {} --report /dev/null", workload_bin().display(), workload_args(&comm).join(" "));
    let sql = format!(
        "SELECT COUNT(*) AS n, MIN(count) AS mn, MAX(count) AS mx FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'"
    );
    let out = Command::new(ebq_bin())
        .arg(&sql)
        .args(["--format", "json", "-c", &workload, "--keep-pins", "--pin"])
        .arg(&dir)
        .arg("--pin-header")
        .arg(&header)
        .output()
        .unwrap();
    let bpftool = |args: &[&str]| -> serde_json::Value {
        let o = Command::new("bpftool").arg("-j").args(args).output().expect("bpftool");
        assert!(o.status.success(), "bpftool {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let groups = dir.join("groups");
    let groups = groups.to_str().unwrap();
    let (show, slot) = if out.status.success() {
        (
            bpftool(&["map", "show", "pinned", groups]),
            bpftool(&["map", "lookup", "pinned", groups, "key", "0", "0", "0", "0"]),
        )
    } else {
        (serde_json::Value::Null, serde_json::Value::Null)
    };
    let header_text = std::fs::read_to_string(&header).unwrap_or_default();
    for p in ["groups", "stats"] {
        let _ = std::fs::remove_file(dir.join(p));
    }
    let _ = std::fs::remove_dir(&dir);
    let _ = std::fs::remove_dir(dir.parent().unwrap());
    let _ = std::fs::remove_file(&header);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((json["n"].as_u64(), json["mn"].as_u64(), json["mx"].as_u64()), (Some(12), Some(3), Some(1200)));
    assert_eq!(show["type"], "percpu_array", "{show}");
    assert_eq!((show["max_entries"].as_u64(), show["bytes_key"].as_u64()), (Some(1), Some(4)), "{show}");
    // Merge as the header says: skip CPUs with count 0, add counts, keep the extremes.
    let per_cpu = slot["formatted"]["values"].as_array().unwrap_or_else(|| panic!("{slot}"));
    let values: Vec<&serde_json::Value> =
        per_cpu.iter().map(|c| &c["value"]).filter(|v| v["count"].as_u64() != Some(0)).collect();
    assert_eq!(values.len(), 2, "both CPUs saw events: {slot}");
    let field = |v: &serde_json::Value, prefix: &str| -> u64 {
        let (_, x) = v.as_object().unwrap().iter().find(|(k, _)| k.starts_with(prefix)).unwrap();
        x.as_u64().unwrap()
    };
    assert_eq!(values.iter().map(|v| field(v, "count")).sum::<u64>(), 12);
    assert_eq!(values.iter().map(|v| field(v, "min_")).min(), Some(3));
    assert_eq!(values.iter().map(|v| field(v, "max_")).max(), Some(1200));
    assert!(header_text.contains("#define EBQ_GROUPS_SINGLE_SLOT 1"), "{header_text}");
    assert!(header_text.contains("groups  BPF_MAP_TYPE_PERCPU_ARRAY, key __u32 0"), "{header_text}");
}
