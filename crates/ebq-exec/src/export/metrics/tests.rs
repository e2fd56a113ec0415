use super::*;
use crate::decode::to_batch;
use crate::{schema, WindowBounds};
use ebq_front::catalog::Catalog;
use ebq_front::hist::Bucket;
use ebq_front::plan::{plan, PlanOptions};

fn physical(sql: &str) -> PhysicalPlan {
    physical_with(sql, &PlanOptions::default())
}

fn physical_with(sql: &str, options: &PlanOptions) -> PhysicalPlan {
    let cat = Catalog::fixture();
    let q = ebq_front::parse::parse_query(sql).unwrap();
    let l = ebq_front::bind::bind(&q, &cat).unwrap();
    plan(sql, &l, &cat, options).unwrap()
}

fn window(plan: &PhysicalPlan, rows: Vec<Vec<Value>>, partial: bool) -> Output {
    window_with(plan, rows, partial, vec![])
}

/// A window whose rows carry `extras` (the plan's distributions).
fn window_with(plan: &PhysicalPlan, rows: Vec<Vec<Value>>, partial: bool, extras: Vec<Vec<Value>>) -> Output {
    Output {
        window: WindowBounds::Time { start_ns: 0, end_ns: 1_000_000_000 },
        batch: to_batch(&schema(plan), &rows),
        partial,
        extras,
    }
}

fn roles(schema: &MetricSchema) -> Vec<String> {
    schema
        .roles
        .iter()
        .map(|r| match r {
            ColumnRole::Label { name } => format!("label {name}"),
            ColumnRole::Metric { name, kind, .. } => format!("{kind:?} {name}"),
            ColumnRole::Quantile { name, q, .. } => format!("Summary {name} q={q}"),
        })
        .collect()
}

#[test]
fn keys_are_labels_and_aggregates_are_typed_by_function() {
    let p = physical(
        "SELECT syscall_name(id) AS syscall, comm, COUNT(*) AS calls, SUM(args[2]) AS req_bytes, \
         MAX(args[2]) AS max_bytes, AVG(args[2]) AS avg_bytes, SUM(args[2]) / 1024 AS req_kb \
         FROM raw_syscalls.sys_enter GROUP BY id, comm WINDOW(time, 1000)",
    );
    let s = MetricSchema::of("vfs", &p).unwrap();
    assert_eq!(
        roles(&s),
        [
            "label syscall",
            "label comm",
            "Counter ebq_vfs_calls_total",
            "Counter ebq_vfs_req_bytes_total",
            "Gauge ebq_vfs_max_bytes",
            "Gauge ebq_vfs_avg_bytes",
            "Gauge ebq_vfs_req_bytes",
        ]
    );
    let rows = vec![
        vec![
            Value::S("read".into()),
            Value::S("cat".into()),
            Value::U(3),
            Value::U(300),
            Value::U(200),
            Value::F(100.0),
            Value::U(0),
        ],
        vec![
            Value::S("write".into()),
            Value::S("cat".into()),
            Value::U(1),
            Value::U(2048),
            Value::U(2048),
            Value::F(2048.0),
            Value::U(2),
        ],
    ];
    let (t, fams) = s.families(&window(&p, rows, false));
    assert_eq!(t, Temporality::Delta);
    assert_eq!(fams.len(), 5);
    let calls = &fams[0];
    assert_eq!(calls.kind, MetricKind::Counter);
    assert_eq!(calls.samples.len(), 2);
    assert_eq!(calls.samples[1].labels, vec![("syscall".into(), "write".into()), ("comm".into(), "cat".into())]);
    assert_eq!(calls.samples[1].value, SampleValue::Number(1.0));
    // req_kb is scaled back to bytes (the integer division already happened in the query).
    assert_eq!(fams[4].name, "ebq_vfs_req_bytes");
    assert_eq!(fams[4].unit, Some(Unit::Bytes));
    assert_eq!(fams[4].samples[1].value, SampleValue::Number(2048.0));
}

#[test]
fn quantiles_of_a_signed_argument_are_gauges() {
    let p =
        physical("SELECT P50(ret) AS p50_ret, P99(ret) AS p99_ret FROM syscalls.sys_exit_pread64 WINDOW(time, 1000)");
    let s = MetricSchema::of("q", &p).unwrap();
    assert_eq!(roles(&s), ["Gauge ebq_q_p50_ret", "Gauge ebq_q_p99_ret"]);
}

#[test]
fn signed_sums_are_gauges() {
    let p = physical("SELECT SUM(ret) AS total FROM syscalls.sys_exit_pread64 WINDOW(time, 1000)");
    let s = MetricSchema::of("q", &p).unwrap();
    assert_eq!(roles(&s), ["Gauge ebq_q_total"]);
}

#[test]
fn histograms_have_exact_inclusive_bounds_in_base_units() {
    let p = physical(
        "SELECT comm, HIST(args[2]) AS size_bytes, HIST(args[2]) AS lat_us FROM raw_syscalls.sys_enter GROUP BY comm",
    );
    let s = MetricSchema::of("h", &p).unwrap();
    assert_eq!(roles(&s), ["label comm", "Histogram ebq_h_size_bytes", "Histogram ebq_h_lat_seconds"]);
    let hist = Value::Hist(vec![
        Bucket { lo: 0, hi: 1, count: 2 },
        Bucket { lo: 1, hi: 2, count: 0 },
        Bucket { lo: 2, hi: 4, count: 5 },
        Bucket { lo: 1 << 63, hi: 1 << 64, count: 1 },
    ]);
    let (t, fams) = s.families(&window(&p, vec![vec![Value::S("dd".into()), hist.clone(), hist]], true));
    assert_eq!(t, Temporality::Cumulative, "a snapshot of a query without WINDOW is a running total");
    // Every bucket of the u64 log2 layout, empty ones included, the same for every sample.
    let SampleValue::Histogram { buckets, count, sum } = &fams[0].samples[0].value else { panic!() };
    assert_eq!(buckets.len(), 65);
    assert_eq!(&buckets[..4], [(0.0, 2), (1.0, 0), (3.0, 5), (7.0, 0)]);
    assert_eq!(buckets[63], (((1u64 << 63) - 1) as f64, 0));
    assert_eq!(buckets[64], (f64::INFINITY, 1));
    assert_eq!((*count, *sum), (8, None), "no SUM of the argument: the sum is unknown");
    let SampleValue::Histogram { buckets, .. } = &fams[1].samples[0].value else { panic!() };
    assert_eq!(buckets[2], (0.000003, 5));
}

#[test]
fn the_kernels_sums_and_sketches_give_histograms_and_summaries_their_sum_and_count() {
    let p = physical(
        "SELECT comm, COUNT(*) AS calls, HIST(args[2]) AS size_bytes, P50(args[2]) AS p50_len_bytes, \
         HIST(args[1]) AS other_bytes FROM raw_syscalls.sys_enter GROUP BY comm",
    );
    use ebq_front::plan::Distribution;
    assert!(matches!(
        p.user.distributions.as_slice(),
        [Distribution::HistSum { .. }, Distribution::HistSum { .. }, Distribution::Sketch { sketch: 0, .. }]
    ));
    let s = MetricSchema::of("h", &p).unwrap();
    let hist = Value::Hist(vec![Bucket { lo: 2, hi: 4, count: 2 }]);
    let row = vec![Value::S("dd".into()), Value::U(3), hist.clone(), Value::U(3), hist];
    // 2 and 4: sketch buckets 63 (holding 2) and 127 (holding 4), exact sum 6; a zero too.
    let sketch = Value::Hist(vec![
        Bucket { lo: 0, hi: 1, count: 1 },
        Bucket { lo: 2, hi: 3, count: 1 },
        Bucket { lo: 4, hi: 5, count: 1 },
    ]);
    let extras = vec![Value::U(6), Value::U(9), sketch, Value::U(6)];
    let (_, fams) = s.families(&window_with(&p, vec![row], false, vec![extras]));
    let by_name = |n: &str| &fams.iter().find(|f| f.name == n).unwrap().samples[0].value;
    let SampleValue::Histogram { count, sum, .. } = by_name("ebq_h_size_bytes") else { panic!() };
    assert_eq!((*count, *sum), (2, Some(6.0)));
    let SampleValue::Histogram { sum, .. } = by_name("ebq_h_other_bytes") else { panic!() };
    assert_eq!(*sum, Some(9.0), "each histogram has its own argument's sum");
    assert_eq!(
        by_name("ebq_h_len_bytes"),
        &SampleValue::Summary { quantiles: vec![(0.5, 3.0)], count: Some(3), sum: Some(6.0) },
        "the sketch's own count and sum"
    );
    let SampleValue::Exponential(e) = by_name("ebq_h_len_histogram_bytes") else { panic!() };
    assert_eq!((e.scale, e.count, e.sum, e.zero_count), (6, 3, 6.0, 1));
    assert_eq!(e.positive, [(63, 1), (127, 1)].into_iter().collect());
    assert!(e.negative.is_empty());
    assert!(fams[0].integer, "COUNT(*) is a whole number");
    let names: Vec<String> = s.family_names().into_iter().map(|(n, _, _)| n).collect();
    assert!(names.contains(&"ebq_h_len_histogram_bytes".to_string()), "{names:?}");
}

#[test]
fn sketches_in_kib_shift_by_ten_octaves_and_decimal_units_keep_their_own_unit() {
    let p = physical(
        "SELECT P50(args[2]) AS p50_len_kb, P99(args[1]) AS p99_lat_us FROM raw_syscalls.sys_enter WINDOW(time, 1000)",
    );
    let s = MetricSchema::of("u", &p).unwrap();
    let named: Vec<(&str, Option<Unit>, i32)> =
        s.exponentials.iter().map(|e| (e.name.as_str(), e.unit, e.shift)).collect();
    assert_eq!(
        named,
        [("ebq_u_len_histogram_bytes", Some(Unit::Bytes), 10), ("ebq_u_lat_us_histogram", None, 0)],
        "KiB → bytes is 2^10; µs → seconds is no power of two, so the buckets stay in µs"
    );
    let sketch = Value::Hist(vec![Bucket { lo: 2, hi: 3, count: 1 }]);
    let lat = Value::Hist(vec![Bucket { lo: 7, hi: 8, count: 1 }]);
    let out =
        window_with(&p, vec![vec![Value::U(2), Value::U(7)]], false, vec![vec![sketch, Value::U(2), lat, Value::U(7)]]);
    let (_, fams) = s.families(&out);
    let exp = |name: &str| match &fams.iter().find(|f| f.name == name).unwrap().samples[0].value {
        SampleValue::Exponential(e) => e.clone(),
        other => panic!("{other:?}"),
    };
    let e = exp("ebq_u_len_histogram_bytes");
    assert_eq!(e.positive, [(63 + 640, 1)].into_iter().collect(), "2 KiB = 2048 B = 2^11, the top of bucket 703");
    assert_eq!(e.sum, 2048.0);
    let e = exp("ebq_u_lat_us_histogram");
    assert_eq!((e.positive, e.sum), ([(ebq_index(7), 1)].into_iter().collect(), 7.0), "7 µs, in µs");
    // The summary is still in seconds.
    let SampleValue::Summary { quantiles, .. } =
        &fams.iter().find(|f| f.name == "ebq_u_lat_seconds").unwrap().samples[0].value
    else {
        panic!()
    };
    assert_eq!(quantiles, &[(0.99, 7e-6)]);
}

/// OTel's index of `v` at scale 6.
fn ebq_index(v: u64) -> i32 {
    ebq_front::hist::exp_index(v)
}

#[test]
fn quantiles_of_one_argument_form_one_summary() {
    let p = physical(
        "SELECT comm, P50(args[2]) AS p50_size_bytes, P99(args[2]) AS p99_size_bytes, COUNT(*) AS n \
         FROM raw_syscalls.sys_enter GROUP BY comm WINDOW(time, 1000)",
    );
    let s = MetricSchema::of("q", &p).unwrap();
    assert_eq!(
        roles(&s),
        ["label comm", "Summary ebq_q_size_bytes q=0.5", "Summary ebq_q_size_bytes q=0.99", "Counter ebq_q_n_total"]
    );
    let rows = vec![vec![Value::S("dd".into()), Value::U(64), Value::U(4096), Value::U(10)]];
    let (_, fams) = s.families(&window(&p, rows, false));
    assert_eq!(fams.len(), 3);
    assert_eq!((fams[2].name.as_str(), fams[2].kind), ("ebq_q_size_histogram_bytes", MetricKind::Exponential));
    assert!(fams[2].samples.is_empty(), "a row without its sketch (extras) has no exponential sample");
    assert_eq!(fams[0].kind, MetricKind::Summary);
    assert_eq!(fams[0].samples.len(), 1);
    assert_eq!(
        fams[0].samples[0].value,
        SampleValue::Summary { quantiles: vec![(0.5, 64.0), (0.99, 4096.0)], count: Some(10), sum: None }
    );
}

#[test]
fn a_summary_never_takes_a_histogram_name() {
    let p = physical(
        "SELECT HIST(args[2]) AS size_bytes, P99(args[2]) AS p99_size_bytes, P50(args[2]) AS p50 \
         FROM raw_syscalls.sys_enter WINDOW(time, 1000)",
    );
    let s = MetricSchema::of("q", &p).unwrap();
    assert_eq!(
        roles(&s),
        ["Histogram ebq_q_size_bytes", "Summary ebq_q_size_quantiles_bytes q=0.99", "Summary ebq_q_quantile q=0.5"]
    );
}

#[test]
fn join_keys_are_labelled_by_column_name() {
    let p = physical(
        "SELECT i.comm, c.dev, HIST((c.time - i.time) / 1000) AS usecs FROM block.block_rq_issue i \
         JOIN block.block_rq_complete c ON i.dev = c.dev AND i.sector = c.sector GROUP BY i.comm, c.dev",
    );
    let s = MetricSchema::of("bio", &p).unwrap();
    assert_eq!(roles(&s), ["label comm", "label dev", "Histogram ebq_bio_seconds"]);
}

#[test]
fn empty_windows_still_declare_their_families() {
    let p = physical("SELECT COUNT(*) AS calls FROM raw_syscalls.sys_enter WINDOW(time, 1000)");
    let s = MetricSchema::of("e", &p).unwrap();
    let (_, fams) = s.families(&window(&p, vec![], false));
    assert_eq!(fams.len(), 1);
    assert!(fams[0].samples.is_empty());
}

#[test]
fn row_queries_are_refused() {
    let p = physical("SELECT pid, comm FROM raw_syscalls.sys_enter");
    assert!(MetricSchema::of("rows", &p).unwrap_err().contains("streams rows"));
}

#[test]
fn self_metrics_name_the_query() {
    let stats = QueryStats {
        seen: 10,
        matched: 7,
        dropped: 1,
        missed: 4,
        missed_starts: 2,
        superseded: 6,
        evicted: 5,
        unreadable_strings: 7,
        middle_unmatched: 8,
        bpf_run_time_ns: 2_000_000_000,
        ..Default::default()
    };
    let fams = self_families("vfs", &stats, 3);
    let names: Vec<&str> = fams.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ebq_query_events_seen_total",
            "ebq_query_events_matched_total",
            "ebq_query_events_dropped_total",
            "ebq_query_events_missed_total",
            "ebq_query_join_starts_missed_total",
            "ebq_query_pairs_superseded_total",
            "ebq_query_pairs_evicted_total",
            "ebq_query_unreadable_strings_total",
            "ebq_query_middle_unmatched_total",
            "ebq_query_bpf_runs_total",
            "ebq_query_bpf_run_seconds_total",
            "ebq_query_windows_total",
        ]
    );
    let value = |i: usize| fams[i].samples[0].value.clone();
    assert_eq!(
        (value(3), value(4), value(5), value(6), value(7), value(8)),
        (
            SampleValue::Number(4.0),
            SampleValue::Number(2.0),
            SampleValue::Number(6.0),
            SampleValue::Number(5.0),
            SampleValue::Number(7.0),
            SampleValue::Number(8.0)
        )
    );
    assert_eq!(value(10), SampleValue::Number(2.0));
    assert_eq!(fams[11].samples[0].labels, vec![("query".into(), "vfs".into())]);
}

#[test]
fn a_grouped_join_of_two_streams_exports_keys_as_labels_and_count_as_a_counter() {
    let p = physical(
        "SELECT a.fd, COUNT(*) AS pairs, MAX(b.ret) AS biggest, SUM(a.count) AS asked_bytes \
         FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
         WHERE a.tid = b.tid GROUP BY a.fd WINDOW(time, 1000)",
    );
    let s = MetricSchema::of("j", &p).unwrap();
    assert_eq!(
        roles(&s),
        ["label fd", "Counter ebq_j_pairs_total", "Gauge ebq_j_biggest", "Counter ebq_j_asked_bytes_total"]
    );
    let rows = physical(
        "SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
         WHERE a.tid = b.tid WINDOW(time, 1000)",
    );
    assert!(MetricSchema::of("j", &rows).unwrap_err().contains("streams rows"));
}

#[test]
fn an_exporters_hist_is_also_a_scale_0_native_histogram_and_a_signed_one_is_not() {
    let options = PlanOptions { hist_buckets: Log2::Ceil, ..Default::default() };
    let p = physical_with(
        "SELECT HIST(args[2]) AS size_bytes, P99(args[2]) AS p99_size_bytes, HIST(id) AS id_hist \
         FROM raw_syscalls.sys_enter WINDOW(time, 1000)",
        &options,
    );
    let s = MetricSchema::of("h", &p).unwrap();
    let named: Vec<&str> = s.exponentials.iter().map(|e| e.name.as_str()).collect();
    // The sketch's family has the stem's name; the HIST's steps aside; HIST(id) is signed.
    assert_eq!(named, ["ebq_h_size_log2_histogram_bytes", "ebq_h_size_histogram_bytes"], "in column order");
    // Floor buckets (ebq run's default) are no native buckets: no family.
    let floor =
        MetricSchema::of("h", &physical("SELECT HIST(args[2]) AS size_bytes FROM raw_syscalls.sys_enter")).unwrap();
    assert!(floor.exponentials.is_empty());

    // Values 0, 1, 4 and 5: the zero bucket, then OTel's (2^i, 2^(i+1)] for i = −1, 1 and 2.
    let c = Log2::Ceil;
    let hist: Vec<Bucket> = [0u64, 1, 4, 5]
        .iter()
        .map(|&v| {
            let (lo, hi) = c.bounds(c.index(v), false);
            Bucket { lo, hi, count: 1 }
        })
        .collect();
    let sketch = Value::Hist(vec![Bucket { lo: 4, hi: 5, count: 4 }]);
    let ids = Value::Hist(vec![]);
    let row = vec![Value::Hist(hist), Value::U(4), ids];
    // Extras in plan order: HIST(args[2])'s sum, HIST(id)'s sum, then the sketch and its sum.
    let out = window_with(&p, vec![row], false, vec![vec![Value::U(10), Value::I(0), sketch, Value::U(10)]]);
    let (_, fams) = s.families(&out);
    let f = fams.iter().find(|f| f.name == "ebq_h_size_log2_histogram_bytes").unwrap();
    let SampleValue::Exponential(e) = &f.samples[0].value else { panic!("{f:?}") };
    assert_eq!((e.scale, e.count, e.zero_count, e.sum), (0, 4, 1, 10.0));
    assert_eq!(e.positive, [(-1, 1), (1, 1), (2, 1)].into_iter().collect(), "OTel index n − 1 of (2^(n−1), 2^n]");
}
