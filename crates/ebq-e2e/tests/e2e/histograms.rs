//! Issue 3, item 3: HIST, LHIST and quantiles computed in the kernel, checked
//! against the pread64 sizes the workload issued (`--sizes`, cycled per fd)
//! and against the same events streamed raw.

use crate::common;

use common::{ebq_bin, engine, rows_of, run_around, run_around_with, u, workload_bin, Row};
use ebq::hist::{self, Bucket, Linear, SKETCH_RELATIVE_ERROR};
use ebq::plan::PlanOptions;
use ebq::runtime::Value;
use ebq::Scope;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::process::Command;

/// Sizes spanning buckets at their edges: 0, 1, 2^k − 1, 2^k, and up to 5 MiB.
const SIZES: &[u64] = &[0, 1, 2, 3, 4, 7, 8, 100, 127, 128, 129, 1000, 4095, 4096, 65535, 65536, 1_000_000, 5_242_880];

fn sizes_arg() -> String {
    SIZES.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",")
}

/// The `count` of every call, in order, for `calls` calls per fd.
fn issued(calls: &[u64]) -> Vec<u64> {
    calls.iter().flat_map(|&c| (0..c).map(|j| SIZES[(j % SIZES.len() as u64) as usize])).collect()
}

fn workload(comm: &str, calls: &[u64]) -> Vec<String> {
    let calls: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
    ["pread", "--fds", &calls.len().to_string(), "--calls", &calls.join(","), "--sizes", &sizes_arg()]
        .into_iter()
        .map(str::to_string)
        .chain(["--comm", comm, "--fd-base", "100"].map(str::to_string))
        .collect()
}

fn run(sql: &str, comm: &str, calls: &[u64]) -> (Vec<ebq::Output>, ebq::QueryStats, Json) {
    let args = workload(comm, calls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_around(&sql.replace("{comm}", comm), Scope::Process, &args)
}

/// The buckets ebq should report for `values`: first to last non-empty, gaps included.
fn expected(values: &[u64], index: impl Fn(u64) -> u32, bounds: impl Fn(u32) -> (i128, i128)) -> Vec<Bucket> {
    let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
    for v in values {
        *counts.entry(index(*v)).or_default() += 1;
    }
    let (first, last) = (*counts.keys().next().unwrap(), *counts.keys().next_back().unwrap());
    (first..=last)
        .map(|i| {
            let (lo, hi) = bounds(i);
            Bucket { lo, hi, count: counts.get(&i).copied().unwrap_or(0) }
        })
        .collect()
}

fn hist_of(row: &Row, col: &str) -> Vec<Bucket> {
    match row.get(col) {
        Some(Value::Hist(b)) => b.clone(),
        other => panic!("column {col}: expected a histogram, got {other:?}"),
    }
}

fn log2_expected(values: &[u64]) -> Vec<Bucket> {
    expected(values, hist::hist_index, |i| hist::hist_bounds(i, false))
}

fn exact_quantile(values: &[u64], ppm: u32) -> i128 {
    let mut v: Vec<i128> = values.iter().map(|&x| i128::from(x)).collect();
    hist::exact_quantile(&mut v, ppm).unwrap()
}

fn assert_within_bound(estimate: u64, exact: i128, what: &str) {
    let err = (i128::from(estimate) - exact).unsigned_abs() as f64 / (exact.max(1) as f64);
    assert!(err <= SKETCH_RELATIVE_ERROR, "{what}: estimate {estimate}, exact {exact}, relative error {err}");
}

#[test]
fn hist_counts_every_pread_in_its_log2_bucket() {
    let calls = [57, 31];
    let (outs, stats, report) = run(
        "SELECT HIST(count) AS h, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'",
        "hq-hist",
        &calls,
    );
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    let values = issued(&calls);
    assert_eq!(report["total_calls"].as_u64(), Some(values.len() as u64));
    // Accounting (one event, aggregate): n + dropped + missed = 88; the buckets need every event.
    common::assert_exact_or_accounted(u(&rows[0], "n"), 88, &stats, "preads");
    if common::lost(&stats) > 0 {
        return;
    }
    let h = hist_of(&rows[0], "h");
    assert_eq!(h, log2_expected(&values));
    // Spot checks that do not go through the Rust mirror: 88 calls cycle through 18 sizes
    // (57 = 3·18 + 3, 31 = 18 + 13), so 0, 1 and 2 occur 6 times each, 3 five times.
    let n = |x: u64| values.iter().filter(|&&v| v == x).count() as u64;
    assert_eq!((n(0), n(1), n(2), n(3)), (6, 6, 6, 5));
    assert_eq!(h[0], Bucket { lo: 0, hi: 1, count: 6 });
    assert_eq!(h[1], Bucket { lo: 1, hi: 2, count: 6 });
    assert_eq!(h[2], Bucket { lo: 2, hi: 4, count: 11 });
    // 4095 and 4096 fall on either side of a power of two.
    let at = |lo: i128| h.iter().find(|b| b.lo == lo).unwrap().count;
    assert_eq!(at(2048), values.iter().filter(|&&v| v == 4095).count() as u64);
    assert_eq!(at(4096), values.iter().filter(|&&v| v == 4096).count() as u64);
    assert_eq!(h.last().unwrap(), &Bucket { lo: 1 << 22, hi: 1 << 23, count: 4 });
    assert_eq!(h.iter().map(|b| b.count).sum::<u64>(), 88);
    assert_eq!(stats.dropped, 0);
}

#[test]
fn lhist_counts_linear_buckets_with_underflow_and_overflow() {
    let calls = [40];
    let (outs, stats, _) = run(
        "SELECT LHIST(count, 2, 1000, 125) AS l, LHIST(count, 0, 10, 1) AS small FROM syscalls.sys_enter_pread64 \
         WHERE comm = '{comm}'",
        "hq-lhist",
        &calls,
    );
    let rows = rows_of(&outs);
    let values = issued(&calls);
    let l = Linear { min: 2, max: 1000, step: 125 };
    let want = expected(&values, |v| l.index(i128::from(v)), |i| l.bounds(i, false));
    let got = hist_of(&rows[0], "l");
    // Accounting (one event, aggregate): bucketed + dropped + missed = the workload's; buckets exact when none lost.
    common::assert_exact_or_accounted(got.iter().map(|b| b.count).sum(), values.len() as u64, &stats, "preads");
    if common::lost(&stats) > 0 {
        return;
    }
    assert_eq!(got, want);
    // Underflow [0, 2) holds 0 and 1; the last linear bucket is cut at max; overflow starts at max.
    assert_eq!(got[0], Bucket { lo: 0, hi: 2, count: values.iter().filter(|&&v| v < 2).count() as u64 });
    assert_eq!(got[0].count, 6);
    assert_eq!(got[8], Bucket { lo: 877, hi: 1000, count: 0 });
    assert_eq!(got[9], Bucket { lo: 1000, hi: 1 << 64, count: values.iter().filter(|&&v| v >= 1000).count() as u64 });
    let s = Linear { min: 0, max: 10, step: 1 };
    assert_eq!(hist_of(&rows[0], "small"), expected(&values, |v| s.index(i128::from(v)), |i| s.bounds(i, false)));
    assert_eq!(stats.dropped, 0);
}

#[test]
fn quantiles_are_within_the_stated_bound_of_the_raw_events() {
    let calls = [300, 211];
    let comm = "hq-quant";
    let (outs, stats, _) = run(
        "SELECT P50(count) AS p50, P90(count) AS p90, P99(count) AS p99, P999(count) AS p999, \
         QUANTILE(count, 0.25) AS q25, QUANTILE(count, 1) AS top, MAX(count) AS mx, COUNT(*) AS n \
         FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'",
        comm,
        &calls,
    );
    let agg = &rows_of(&outs)[0];
    // Accounting (one event, aggregate; then rows): each run's count + dropped + missed = the
    // workload's; the quantiles are compared with the raw events only when neither lost any.
    let known_n = issued(&calls).len() as u64;
    common::assert_exact_or_accounted(u(agg, "n"), known_n, &stats, "preads (aggregate)");
    assert_eq!(stats.dropped, 0);
    // The same workload again, every event streamed raw.
    let (raw_outs, raw_stats, _) =
        run("SELECT count FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'", comm, &calls);
    assert_eq!(raw_stats.dropped, 0);
    let mut raw: Vec<u64> = rows_of(&raw_outs).iter().map(|r| u(r, "count")).collect();
    common::assert_exact_or_accounted(raw.len() as u64, known_n, &raw_stats, "preads (rows)");
    if common::lost(&stats) + common::lost(&raw_stats) > 0 {
        return;
    }
    let mut known = issued(&calls);
    raw.sort_unstable();
    known.sort_unstable();
    assert_eq!(raw, known, "the raw events are the sizes the workload issued");
    assert_eq!(u(agg, "n"), raw.len() as u64);
    for (col, ppm) in
        [("p50", 500_000), ("p90", 900_000), ("p99", 990_000), ("p999", 999_000), ("q25", 250_000), ("top", 1_000_000)]
    {
        assert_within_bound(u(agg, col), exact_quantile(&raw, ppm), col);
    }
    // Below 92 every sketch bucket holds one integer: exact.
    let q25 = exact_quantile(&raw, 250_000);
    assert!(q25 < i128::from(hist::SKETCH_EXACT_BELOW), "{q25}");
    assert_eq!(i128::from(u(agg, "q25")), q25);
    assert_eq!(u(agg, "mx"), 5_242_880);
}

#[test]
fn grouped_sliding_windows_combine_histograms_and_sketches_of_their_panes() {
    // 60 + 40 events, one thread: the kernel numbers them in issue order, so
    // count windows hold known calls. Panes of 20, windows of 40.
    let calls = [60, 40];
    let (outs, stats, _) = run(
        "SELECT fd, HIST(count) AS h, P50(count) AS p50, COUNT(*) AS n, SUM(count) AS s \
         FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd WINDOW(count, 40, 20)",
        "hq-window",
        &calls,
    );
    assert_eq!(stats.dropped, 0);
    // Accounting (one event, count windows): matched + missed = the workload's 100; a lost
    // event shifts every later pane, so the panes are checked only when none was.
    common::assert_exact_or_accounted(stats.matched, 100, &stats, "preads");
    if common::lost(&stats) > 0 {
        return;
    }
    let fd_of = |i: usize| if i < 60 { 100 } else { 101 };
    let events: Vec<(u64, u64)> = issued(&calls).into_iter().enumerate().map(|(i, v)| (fd_of(i), v)).collect();
    assert_eq!(outs.len(), 5, "five panes of 20 events");
    let mut checked = 0;
    for (w, out) in outs.iter().enumerate() {
        // Output w combines panes w-1 and w (the first has only pane 0).
        let from = w.saturating_sub(1) * 20;
        let window = &events[from..(w + 1) * 20];
        let rows = rows_of(std::slice::from_ref(out));
        let mut fds: Vec<u64> = window.iter().map(|e| e.0).collect();
        fds.dedup();
        assert_eq!(rows.len(), fds.len(), "window {w}: one row per fd");
        for r in &rows {
            let fd = u(r, "fd");
            let values: Vec<u64> = window.iter().filter(|e| e.0 == fd).map(|e| e.1).collect();
            assert_eq!(u(r, "n"), values.len() as u64, "window {w} fd {fd}");
            assert_eq!(u(r, "s"), values.iter().sum::<u64>());
            assert_eq!(hist_of(r, "h"), log2_expected(&values), "window {w} fd {fd}");
            assert_within_bound(u(r, "p50"), exact_quantile(&values, 500_000), "p50");
            checked += 1;
        }
    }
    assert_eq!(checked, 1 + 1 + 2 + 1 + 1);
}

#[test]
fn signed_arguments_get_a_bucket_for_negatives() {
    // ret of pread64 at offset 0 of a 1 MiB file is min(count, 1 MiB); ret − 100 is
    // negative for the small sizes, so negatives land in HIST's first bucket, LHIST's
    // underflow and the sketch's mirrored buckets.
    let calls = [36];
    let (outs, _, _) = run(
        "SELECT HIST(ret - 100) AS h, LHIST(ret - 100, -10, 200, 50) AS l, P50(ret - 100) AS p, \
         QUANTILE(ret - 100, 0.1) AS p10, MIN(ret) AS lo FROM syscalls.sys_exit_pread64 WHERE comm = '{comm}'",
        "hq-signed",
        &calls,
    );
    let r = &rows_of(&outs)[0];
    let values: Vec<i64> = issued(&calls).into_iter().map(|v| v.min(1 << 20) as i64 - 100).collect();
    let negatives = values.iter().filter(|&&v| v < 0).count() as u64;
    assert_eq!(negatives, 2 * 7, "sizes 0, 1, 2, 3, 4, 7 and 8, in both cycles");
    let expect = |index: &dyn Fn(i64) -> u32, bounds: &dyn Fn(u32) -> (i128, i128)| -> Vec<Bucket> {
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for v in &values {
            *counts.entry(index(*v)).or_default() += 1;
        }
        let (first, last) = (*counts.keys().next().unwrap(), *counts.keys().next_back().unwrap());
        (first..=last)
            .map(|i| {
                let (lo, hi) = bounds(i);
                Bucket { lo, hi, count: counts.get(&i).copied().unwrap_or(0) }
            })
            .collect()
    };
    let h = hist_of(r, "h");
    assert_eq!(h, expect(&hist::hist_index_signed, &|i| hist::hist_bounds(i, true)));
    assert_eq!(h[0], Bucket { lo: i128::from(i64::MIN), hi: 0, count: negatives });
    let l = Linear { min: -10, max: 200, step: 50 };
    let got = hist_of(r, "l");
    assert_eq!(got, expect(&|v| l.index(i128::from(v)), &|i| l.bounds(i, true)));
    assert_eq!(got[0].hi, -10);
    let exact = |ppm: u32| {
        let mut v: Vec<i128> = values.iter().map(|&x| i128::from(x)).collect();
        hist::exact_quantile(&mut v, ppm).unwrap()
    };
    for (col, ppm) in [("p", 500_000), ("p10", 100_000)] {
        let Some(Value::I(est)) = r.get(col) else { panic!("{col}: a quantile of a signed argument is signed: {r:?}") };
        let exact = exact(ppm);
        let err = (i128::from(*est) - exact).unsigned_abs() as f64 / (exact.unsigned_abs().max(1) as f64);
        assert!(err <= SKETCH_RELATIVE_ERROR, "{col}: {est} vs {exact}");
    }
    assert!(exact(100_000) < 0, "the 10th percentile is negative");
    assert_eq!(u(r, "lo"), 0);
}

#[test]
fn a_full_group_map_counts_histogram_events_as_dropped() {
    // One group fits: fd 100's 30 calls are counted, fd 101's 12 are dropped, never lost silently.
    let calls = [30, 12];
    let engine = engine().with_options(PlanOptions { max_groups: 1, ..Default::default() });
    let args = workload("hq-full", &calls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (outs, stats, _) = run_around_with(
        &engine,
        "SELECT fd, HIST(count) AS h, P99(count) AS p FROM syscalls.sys_enter_pread64 WHERE comm = 'hq-full' GROUP BY fd",
        Scope::Process,
        &args,
    );
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1);
    assert_eq!(u(&rows[0], "fd"), 100);
    assert_eq!(hist_of(&rows[0], "h").iter().map(|b| b.count).sum::<u64>(), 30);
    assert_eq!(stats.matched, 42);
    assert_eq!(stats.dropped, 12);
}

#[test]
fn a_full_sketch_map_counts_the_missing_events_as_dropped() {
    // Room for 4 sketch buckets: the first sizes issued (0, 1, 2, 3) take them; every
    // other event is counted (COUNT, HIST) but missing from the quantile, and dropped.
    let calls = [57, 31];
    let engine = engine().with_options(PlanOptions { sketch_buckets: 4, ..Default::default() });
    let args = workload("hq-sketch", &calls);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (outs, stats, _) = run_around_with(
        &engine,
        "SELECT COUNT(*) AS n, HIST(count) AS h, P99(count) AS p FROM syscalls.sys_enter_pread64 \
         WHERE comm = 'hq-sketch'",
        Scope::Process,
        &args,
    );
    let values = issued(&calls);
    let r = &rows_of(&outs)[0];
    assert_eq!(u(r, "n"), 88);
    assert_eq!(hist_of(r, "h").iter().map(|b| b.count).sum::<u64>(), 88);
    assert_eq!(stats.dropped, values.iter().filter(|&&v| v > 3).count() as u64);
    assert_eq!(u(r, "p"), 3, "the quantile of the events the sketch kept");
}

/// Runs the CLI around a workload; returns stdout.
fn cli(format: &str, sql: &str, comm: &str, calls: &[u64]) -> String {
    let wl = format!("{} {}", workload_bin().display(), workload(comm, calls).join(" "));
    let out = Command::new(ebq_bin())
        .args(["--format", format, &sql.replace("{comm}", comm), "-c", &format!("{wl} > /dev/null")])
        .output()
        .expect("run ebq");
    assert!(out.status.success(), "ebq failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

const CLI_SQL: &str = "SELECT comm, COUNT(*), HIST(count) AS h FROM syscalls.sys_enter_pread64 \
                       WHERE comm = '{comm}' GROUP BY comm";

#[test]
fn json_lines_have_one_row_per_non_empty_bucket() {
    let calls = [44];
    let text = cli("json", CLI_SQL, "hq-json", &calls);
    let want: Vec<Bucket> = log2_expected(&issued(&calls)).into_iter().filter(|b| b.count > 0).collect();
    let lines: Vec<Json> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), want.len(), "{text}");
    for (line, b) in lines.iter().zip(&want) {
        let keys: Vec<&str> = line.as_object().unwrap().keys().map(String::as_str).collect(); // sorted by serde_json
        let want =
            ["COUNT(*)", "comm", "count", "hi", "lo", "window_end", "window_end_ns", "window_start", "window_start_ns"];
        assert_eq!(keys, want);
        assert_eq!(line["comm"], "hq-json");
        assert_eq!(line["COUNT(*)"], 44);
        assert_eq!((line["lo"].as_u64(), line["hi"].as_u64()), (Some(b.lo as u64), Some(b.hi as u64)));
        assert_eq!(line["count"].as_u64(), Some(b.count));
    }
}

#[test]
fn csv_has_bucket_rows_and_the_terminal_draws_bars() {
    let calls = [44];
    let text = cli("csv", CLI_SQL, "hq-csv", &calls);
    let want: Vec<Bucket> = log2_expected(&issued(&calls)).into_iter().filter(|b| b.count > 0).collect();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("window_start_ns,window_end_ns,window_start,window_end,comm,COUNT(*),lo,hi,count"));
    let rows: Vec<Vec<String>> = lines.map(|l| l.split(',').map(str::to_string).collect()).collect();
    assert_eq!(rows.len(), want.len());
    for (r, b) in rows.iter().zip(&want) {
        assert_eq!(r[4..], [s("hq-csv"), s("44"), b.lo.to_string(), b.hi.to_string(), b.count.to_string()]);
    }
    let table = cli("table", CLI_SQL, "hq-table", &calls);
    assert!(table.contains("comm = hq-table, COUNT(*) = 44\nh:\n"), "{table}");
    // 44 calls over 18 sizes (2 cycles + 8): [0, 1) holds 3 calls, and 4095 (2 calls) sits in [2K, 4K).
    let zero = table.lines().find(|l| l.starts_with("[0, 1) ")).unwrap_or_else(|| panic!("{table}"));
    assert!(zero.contains(" 3 |@") && zero.ends_with('|'), "{zero}");
    assert!(table.contains("[2K, 4K) "), "{table}");
    let widest = want.iter().map(|b| b.count).max().unwrap();
    let bar = table.lines().find(|l| l.contains(&format!(" {widest} |"))).unwrap();
    assert!(bar.contains(&format!("|{}|", "@".repeat(40))), "the largest bucket fills the bar: {bar}");
}

fn s(v: &str) -> String {
    v.to_string()
}

#[test]
fn parquet_and_arrow_files_hold_a_list_of_bucket_structs() {
    let py = ebq_bin().parent().and_then(|d| d.parent()).unwrap().join("pyenv/bin/python");
    if !py.exists() {
        // files.rs creates target/pyenv with pyarrow on first use; run it first.
        assert!(Command::new("python3")
            .args(["-m", "venv"])
            .arg(py.parent().unwrap().parent().unwrap())
            .status()
            .unwrap()
            .success());
        assert!(Command::new(py.with_file_name("pip"))
            .args(["install", "--quiet", "pyarrow"])
            .status()
            .unwrap()
            .success());
    }
    let calls = [44];
    let want: Vec<Bucket> = log2_expected(&issued(&calls));
    for format in ["parquet", "arrow"] {
        let dir = std::env::temp_dir().join(format!("ebq-hist-{}-{format}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("h.{format}"));
        let comm = "hq-file";
        let wl = format!("{} {}", workload_bin().display(), workload(comm, &calls).join(" "));
        let out = Command::new(ebq_bin())
            .args(["--format", format, "-o"])
            .arg(&path)
            .args([&CLI_SQL.replace("{comm}", comm), "-c", &format!("{wl} > /dev/null")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let read = "import sys, json\nimport pyarrow.parquet as pq, pyarrow.ipc as ipc\n\
                    t = pq.read_table(sys.argv[2]) if sys.argv[1] == 'parquet' else ipc.open_file(sys.argv[2]).read_all()\n\
                    print(json.dumps({'type': str(t.schema.field('h').type), 'h': t.column('h').to_pylist()}))";
        let out = Command::new(&py).args(["-c", read, format]).arg(&path).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Json = serde_json::from_slice(&out.stdout).unwrap();
        let ty = v["type"].as_str().unwrap();
        assert!(ty.starts_with("list<") && ty.contains("lo: uint64") && ty.contains("count: uint64"), "{ty}");
        let got: Vec<Bucket> = v["h"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| Bucket {
                lo: i128::from(b["lo"].as_u64().unwrap()),
                hi: i128::from(b["hi"].as_u64().unwrap()),
                count: b["count"].as_u64().unwrap(),
            })
            .collect();
        assert_eq!(got, want, "{format}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
