//! Issue 4 acceptance for joins of two streams (`FROM a, b … WINDOW(time, …)`):
//! the join's rows in each window equal the join computed here from the raw
//! rows of both streams, streamed at the same time by two plain row queries.

use crate::common;

use common::{assert_exact_or_accounted, ebq_bin, engine, lost, rows_of, u, Row, Workload};
use ebq::{Output, RunningQuery, Scope, WindowBounds};
use std::process::Command;
use std::time::{Duration, Instant};

/// Two threads (one per CPU) × 3 fds, 2 ms apart: about 160 ms of preads,
/// so the windows below each see a part of it.
const PREAD: &[&str] = &[
    "pread",
    "--fds",
    "3",
    "--calls",
    "40,25,13",
    "--fd-base",
    "100",
    "--threads-per-cpu",
    "--size-base",
    "96",
    "--gap-us",
    "2000",
];

const ENTER: &str = "SELECT time, tid, fd, comm FROM syscalls.sys_enter_pread64 WHERE fd >= 100";
const EXIT: &str = "SELECT time, tid, ret, comm FROM syscalls.sys_exit_pread64 WHERE ret > 0";

/// The join's outputs and stats, and each raw stream's rows.
type WithRaw = (Vec<Output>, ebq::QueryStats, Vec<Row>, Vec<Row>);

/// Runs the join and both raw streams around one workload run; returns the
/// join's outputs, its stats and the raw rows of each stream.
///
/// Accounting (three row queries on the same events): each raw stream's rows + dropped +
/// missed = the workload's 78 calls, and the join's streams' rows + dropped + missed = its
/// 156 events. The join is compared with the join of the raw rows only when none of the
/// three lost anything (`None` otherwise: another tracer made the kernel skip one program
/// or another, and the two sides saw different events).
fn run_with_raw(join: &str) -> Option<WithRaw> {
    let w = Workload::start(PREAD);
    let e = engine();
    let start = |sql: &str| -> RunningQuery {
        e.prepare(sql)
            .and_then(|p| RunningQuery::start(&p, Scope::Process(w.pid())))
            .unwrap_or_else(|err| panic!("{}", err.render(sql)))
    };
    let mut queries = [start(join), start(ENTER), start(EXIT)];
    w.go();
    let mut outs: [Vec<Output>; 3] = Default::default();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut w = w;
    while w.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "workload did not finish");
        for (q, o) in queries.iter_mut().zip(outs.iter_mut()) {
            o.extend(q.poll(Duration::from_millis(10)).unwrap());
        }
    }
    for (q, o) in queries.iter_mut().zip(outs.iter_mut()) {
        o.extend(q.finish().unwrap());
    }
    let stats = queries[0].stats().unwrap();
    assert_exact_or_accounted(stats.delivered, 156, &stats, "the join's streams' rows");
    assert_eq!(stats.late, 0, "{stats:?}");
    let [join_outs, enter, exit] = outs;
    let (enter, exit) = (rows_of(&enter), rows_of(&exit));
    let mut lost_any = lost(&stats);
    for (raw, rows, what) in [(&queries[1], &enter, "enter rows"), (&queries[2], &exit, "exit rows")] {
        let s = raw.stats().unwrap();
        assert_eq!(s.delivered + s.dropped, s.matched, "{what}: {s:?}");
        assert_exact_or_accounted(rows.len() as u64, 78, &s, what);
        lost_any += lost(&s);
    }
    if lost_any > 0 {
        eprintln!("exact or accounted: {lost_any} events lost across the join and its raw streams: not compared");
    }
    (lost_any == 0).then_some((join_outs, stats, enter, exit))
}

/// `(start_ns, end_ns)` of every output window.
fn bounds(outs: &[Output]) -> Vec<(u64, u64)> {
    outs.iter()
        .map(|o| match o.window {
            WindowBounds::Time { start_ns, end_ns } => (start_ns, end_ns),
            other => panic!("a join returns time windows, got {other:?}"),
        })
        .collect()
}

type Joined = (u64, u64, u64, u64, u64);

/// One raw event as the join saw it. Each program reads the clock itself, so
/// the join's `time` of an event is a few µs off the raw stream's; `seen` is
/// the join's time when the event is in some joined row.
struct Event<'a> {
    row: &'a Row,
    seen: Option<u64>,
}

impl Event<'_> {
    fn time(&self) -> u64 {
        self.seen.unwrap_or_else(|| u(self.row, "time"))
    }
}

/// Matches each raw row to the join's time of the same event: the joined
/// time of the same thread within 500 µs (a thread's calls are 2 ms apart).
fn events<'a>(raw: &'a [Row], joined: &[(u64, u64)]) -> Vec<Event<'a>> {
    let mut used = std::collections::BTreeSet::new();
    let events: Vec<Event> = raw
        .iter()
        .map(|row| {
            let (tid, t) = (u(row, "tid"), u(row, "time"));
            let seen = joined
                .iter()
                .filter(|(jt, j)| *jt == tid && j.abs_diff(t) < 500_000)
                .map(|j| j.1)
                .min_by_key(|j| j.abs_diff(t));
            if let Some(j) = seen {
                used.insert(j);
            }
            Event { row, seen }
        })
        .collect();
    let distinct: std::collections::BTreeSet<u64> = joined.iter().map(|j| j.1).collect();
    assert_eq!(used, distinct, "every joined time is one raw event's");
    events
}

/// The join, per window, of `enter` × `exit` rows assigned to panes by
/// `pane_of`: same thread, the enter first.
fn expected(
    enter: &[Event],
    exit: &[Event],
    windows: usize,
    panes: u64,
    pane_of: &dyn Fn(bool, usize) -> u64,
    same_comm: bool,
) -> Vec<Vec<Joined>> {
    (0..windows as u64)
        .map(|w| {
            let inside = |p: u64| p + panes > w && p <= w;
            let mut v = vec![];
            for (_, a) in enter.iter().enumerate().filter(|(i, _)| inside(pane_of(true, *i))) {
                for (_, b) in exit.iter().enumerate().filter(|(j, _)| inside(pane_of(false, *j))) {
                    if u(a.row, "tid") == u(b.row, "tid")
                        && a.time() <= b.time()
                        && (!same_comm || a.row.get("comm") == b.row.get("comm"))
                    {
                        v.push((u(a.row, "tid"), u(a.row, "fd"), a.time(), b.time(), u(b.row, "ret")));
                    }
                }
            }
            v.sort_unstable();
            v
        })
        .collect()
}

fn check_against_raw(sql: &str, size_ms: u64, step_ms: u64, same_comm: bool) {
    // 78 calls, each an enter and an exit of the workload's two threads (`run_with_raw`
    // accounts for them); nothing lost in any of the three queries from here on.
    let Some((outs, stats, enter, exit)) = run_with_raw(sql) else { return };
    assert_eq!((enter.len(), exit.len()), (78, 78));
    assert_eq!(stats.delivered, 156, "the join's streams got every row: {stats:?}");
    assert_eq!((stats.dropped, stats.late), (0, 0), "{stats:?}");
    let windows = bounds(&outs);
    assert!(windows.len() >= 3, "the workload spans several windows: {windows:?}");
    let (origin, step) = (windows[0].0, step_ms * 1_000_000);
    for (i, &(s, e)) in windows.iter().enumerate() {
        let first = (i as u64 + 1).saturating_sub(size_ms / step_ms);
        assert_eq!(s, origin + first * step, "window {i} starts {size_ms} ms before its end: {windows:?}");
        if i + 1 < windows.len() {
            assert_eq!(e, origin + (i as u64 + 1) * step, "windows end a step apart: {windows:?}");
        }
    }
    let rows = rows_of(&outs);
    let got: Vec<Vec<Joined>> = (0..windows.len())
        .map(|i| {
            let mut v: Vec<Joined> = rows
                .iter()
                .filter(|r| u(r, "__window") == i as u64)
                .map(|r| (u(r, "tid"), u(r, "fd"), u(r, "t0"), u(r, "t1"), u(r, "ret")))
                .collect();
            v.sort_unstable();
            v
        })
        .collect();
    let total: usize = got.iter().map(Vec::len).sum();
    assert!(total > 78, "each enter meets later exits of its thread: {total} joined rows");
    let enter = events(&enter, &got.iter().flatten().map(|j| (j.0, j.2)).collect::<Vec<_>>());
    let exit = events(&exit, &got.iter().flatten().map(|j| (j.0, j.3)).collect::<Vec<_>>());
    // An event in no joined row has only its raw time: when that is within
    // 200 µs of a pane boundary, the join may have put it on either side, so
    // both are tried.
    let pane = |t: u64| (t - origin) / step;
    let candidates = |e: &Event| -> Vec<u64> {
        let raw = u(e.row, "time");
        match e.seen {
            Some(t) => vec![pane(t)],
            None => {
                let mut c = vec![pane(raw.saturating_sub(200_000).max(origin)), pane(raw + 200_000)];
                c.dedup();
                c
            }
        }
    };
    let cands: Vec<(bool, usize, Vec<u64>)> = enter
        .iter()
        .enumerate()
        .map(|(i, e)| (true, i, candidates(e)))
        .chain(exit.iter().enumerate().map(|(i, e)| (false, i, candidates(e))))
        .collect();
    let open: Vec<&(bool, usize, Vec<u64>)> = cands.iter().filter(|c| c.2.len() > 1).collect();
    assert!(open.len() <= 10, "too many events near a boundary: {}", open.len());
    let mut first_try = None;
    for choice in 0u32..(1 << open.len()) {
        let pane_of = |is_enter: bool, i: usize| -> u64 {
            match open.iter().position(|c| c.0 == is_enter && c.1 == i) {
                Some(k) => open[k].2[((choice >> k) & 1) as usize],
                None => cands.iter().find(|c| c.0 == is_enter && c.1 == i).unwrap().2[0],
            }
        };
        let want = expected(&enter, &exit, windows.len(), size_ms / step_ms, &pane_of, same_comm);
        if want == got {
            return;
        }
        first_try.get_or_insert(want);
    }
    let want = first_try.unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "window {i} {:?}", windows[i]);
    }
    panic!("windows differ in number: got {}, want {}", got.len(), want.len());
}

#[test]
fn tumbling_join_equals_the_join_of_the_raw_rows() {
    check_against_raw(
        "SELECT a.tid, a.fd, a.time AS t0, b.time AS t1, b.ret \
         FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
         WHERE a.tid = b.tid AND a.fd >= 100 AND b.ret > 0 AND a.time <= b.time WINDOW(time, 40)",
        40,
        40,
        false,
    );
}

#[test]
fn sliding_join_with_a_string_key_equals_the_join_of_the_raw_rows() {
    check_against_raw(
        "SELECT a.tid, a.fd, a.time AS t0, b.time AS t1, b.ret \
         FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
         WHERE a.comm = b.comm AND b.tid = a.tid AND a.fd >= 100 AND b.ret > 0 AND b.time - a.time < 1000000000 \
         WINDOW(time, 60, 20)",
        60,
        20,
        true,
    );
}

// `b.time - a.time` is unsigned and wraps when the exit comes first (as in
// the kernel), so `< 1 s` keeps exactly the pairs with the enter first.

#[test]
fn cli_explains_the_split_and_streams_joined_rows_with_their_window() {
    let sql = "SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
               WHERE a.tid = b.tid AND a.fd >= 100 AND a.time <= b.time WINDOW(time, 1000)";
    let out = Command::new(ebq_bin()).args(["explain", sql]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "Stream a: its own program and ring buffer",
        "[kernel] Filter     fd >= 100",
        "[user]   Join       hash join on [a.tid = b.tid] within each window",
        "[user]   Filter     a.time <= b.time",
        "Generated BPF C, stream b:",
    ] {
        assert!(text.contains(line), "EXPLAIN lacks `{line}`:\n{text}");
    }
    let dir = std::env::temp_dir().join(format!("ebq-stream-join-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.json");
    let out = Command::new(ebq_bin())
        .args([sql, "--format", "json", "-c"])
        .arg(format!(
            "{} pread --fds 2 --calls 5,3 --fd-base 100 --report {}",
            common::workload_bin().display(),
            report.display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let rows: Vec<serde_json::Value> =
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // The calls take well under a second: one window (two if a boundary
    // falls between them) holds them, each enter meeting later exits.
    assert!(!rows.is_empty(), "{stderr}");
    assert!(rows.iter().all(|r| r["window_start_ns"].is_u64() && r["window_end_ns"].is_u64()), "{rows:?}");
    assert!(stderr.contains(" 0 dropped, ") && stderr.contains("; join: 0 rows late"), "{stderr}");
    let compile = Command::new(ebq_bin()).args(["compile", sql, "-o"]).arg(dir.join("q.ebq")).output().unwrap();
    assert!(!compile.status.success());
    assert!(String::from_utf8_lossy(&compile.stderr).contains("a bundle holds one"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_join_that_outgrows_its_row_bound_fails_clearly() {
    let w = Workload::start(PREAD);
    let sql = "SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
               WHERE a.tid = b.tid WINDOW(time, 10000)";
    let mut q = RunningQuery::start(&engine().prepare(sql).unwrap(), Scope::Process(w.pid())).unwrap();
    q.set_max_sorted_rows(20);
    w.go();
    let deadline = Instant::now() + Duration::from_secs(60);
    let err = loop {
        assert!(Instant::now() < deadline, "the bound was never reached");
        match q.poll(Duration::from_millis(10)) {
            Ok(_) => assert!(q.held_rows() <= 20),
            Err(e) => break e.to_string(),
        }
    };
    assert!(err.contains("the join holds more than 20 rows in its open windows"), "{err}");
    drop(w);
}

#[test]
fn grouped_aggregates_over_a_join_equal_those_of_the_raw_rows() {
    // One window holds the whole run (about 160 ms), so every event's window
    // is certain and the aggregates must match exactly.
    let sql = "SELECT a.fd, COUNT(*) AS n, SUM(b.ret) AS bytes, MIN(b.ret) AS least, MAX(b.ret) AS most, \
               AVG(b.ret) AS mean, COUNT(DISTINCT b.ret) AS sizes \
               FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
               WHERE a.tid = b.tid AND a.fd >= 100 AND b.ret > 0 AND a.time <= b.time \
               GROUP BY a.fd HAVING COUNT(*) > 100 WINDOW(time, 10000) ORDER BY n DESC";
    // Accounting as in `run_with_raw`; the exact comparison when nothing was lost.
    let Some((outs, stats, enter, exit)) = run_with_raw(sql) else { return };
    assert_eq!(bounds(&outs).len(), 1, "one window");
    assert_eq!((stats.delivered, stats.dropped, stats.late), (156, 0, 0), "{stats:?}");
    let mut want: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    for a in &enter {
        for b in exit.iter().filter(|b| u(b, "tid") == u(a, "tid") && u(a, "time") <= u(b, "time")) {
            want.entry(u(a, "fd")).or_default().push(u(b, "ret"));
        }
    }
    want.retain(|_, rets| rets.len() > 100);
    assert!(want.len() >= 2, "HAVING keeps some groups and not others: {want:?}");
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    let counts: Vec<u64> = rows.iter().map(|r| u(r, "n")).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "ORDER BY n DESC: {counts:?}");
    for r in &rows {
        let rets = &want[&u(r, "fd")];
        let sum: u64 = rets.iter().sum();
        let distinct: std::collections::BTreeSet<&u64> = rets.iter().collect();
        assert_eq!(u(r, "n"), rets.len() as u64, "{r:?}");
        assert_eq!(u(r, "bytes"), sum, "{r:?}");
        assert_eq!(u(r, "least"), *rets.iter().min().unwrap(), "{r:?}");
        assert_eq!(u(r, "most"), *rets.iter().max().unwrap(), "{r:?}");
        assert_eq!(common::f(r, "mean"), sum as f64 / rets.len() as f64, "{r:?}");
        assert_eq!(u(r, "sizes"), distinct.len() as u64, "{r:?}");
    }
}
