//! A table of valid queries over many tracepoints. Each one must prepare,
//! explain (with both a kernel and a user part), compile, load, attach, run
//! around a workload, and detach without error, with consistent statistics.
//! Queries over events the workload is sure to cause (filtered to its comm)
//! must also return rows, and some check the values exactly.
//!
//! Run with `cargo test --release -p ebq-e2e --test e2e valid_queries:: -- --test-threads=1`.

use crate::common;

use common::{engine, f, rows_of, s, u, Row, Workload};
use ebq::bind::QueryBody;
use ebq::runtime::Value;
use ebq::{Output, QueryStats, RunningQuery, Scope, WindowBounds};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// What the workload does while a query runs.
#[derive(Clone, Copy, Debug)]
enum Load {
    /// 2000 read(2) calls of 1 byte on /dev/zero.
    ReadZero,
    /// 3 children, each issuing 5 pread64 calls of 1 byte on /dev/zero.
    Fork,
    /// Creates two 1 MiB files in /tmp, then 50 pread64 calls on each.
    Pread,
}

impl Load {
    fn args(self, comm: &str) -> Vec<String> {
        let args: &[&str] = match self {
            Load::ReadZero => &["readzero", "--count", "2000"],
            Load::Fork => &["fork", "--children", "3", "--calls", "5"],
            Load::Pread => &["pread", "--fds", "2", "--calls", "50,50"],
        };
        args.iter().map(|a| a.to_string()).chain(["--comm".to_string(), comm.to_string()]).collect()
    }
}

/// Everything one query produced.
struct Run {
    outs: Vec<Output>,
    rows: Vec<Row>,
    stats: QueryStats,
    report: serde_json::Value,
}

/// Extra assertions on a run (they panic on failure).
type Check = fn(&Run);

struct Case {
    /// The query; `{comm}` is replaced by the workload's comm.
    sql: &'static str,
    load: Load,
    /// True when the workload is sure to produce matching events.
    nonempty: bool,
    check: Option<Check>,
}

/// A query over events that may or may not happen while it runs.
fn any(sql: &'static str, load: Load) -> Case {
    Case { sql, load, nonempty: false, check: None }
}

/// A query the workload is sure to produce rows for.
fn some(sql: &'static str, load: Load) -> Case {
    Case { sql, load, nonempty: true, check: None }
}

impl Case {
    fn check(mut self, c: Check) -> Case {
        self.check = Some(c);
        self
    }
}

/// A signed or unsigned integer cell as i64.
fn i(row: &Row, col: &str) -> i64 {
    match row.get(col) {
        Some(Value::I(v)) => *v,
        Some(Value::U(v)) => *v as i64,
        other => panic!("column {col}: expected an integer, got {other:?} in {row:?}"),
    }
}

/// Sum of an integer column over all rows.
fn total(run: &Run, col: &str) -> u64 {
    run.rows.iter().map(|r| u(r, col)).sum()
}

fn report_u64(run: &Run, key: &str) -> u64 {
    run.report[key].as_u64().unwrap_or_else(|| panic!("report has no {key}: {}", run.report))
}

/// Number of distinct windows seen (time or count).
fn windows(run: &Run) -> usize {
    run.outs.iter().filter(|o| !matches!(o.window, WindowBounds::Rows)).count()
}

fn wait_for_comm(pid: u32, comm: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim_end() == comm) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("workload {pid} never set its comm to {comm}");
}

/// Prepares, starts and runs one query around its workload.
fn run_case(sql: &str, load: Load, comm: &str) -> Result<(Run, bool), String> {
    let prepared = engine().prepare(sql).map_err(|e| format!("prepare failed:\n{}", e.render(sql)))?;
    let explain = prepared.explain();
    if !explain.contains("[kernel]") || !explain.contains("[user]") {
        return Err(format!("explain lacks a [kernel] or [user] part:\n{explain}"));
    }
    let is_rows = matches!(prepared.logical.body, QueryBody::Rows { .. });
    let mut q = RunningQuery::start(&prepared, Scope::All).map_err(|e| format!("start failed:\n{}", e.render(sql)))?;
    // The workload starts after the query is attached, so its exec, fork and
    // file creation are seen; it then waits on its go-file (sleeping, so it is
    // switched out and woken) until we release it.
    let mut w = Workload::start(&load.args(comm).iter().map(String::as_str).collect::<Vec<_>>());
    wait_for_comm(w.pid(), comm);
    std::thread::sleep(Duration::from_millis(30));
    w.go();
    let started = Instant::now();
    let mut outs = vec![];
    let mut result = Ok(());
    loop {
        let done = w.child.try_wait().map_err(|e| e.to_string())?.is_some();
        if done && started.elapsed() >= Duration::from_millis(150) {
            break;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = w.child.kill();
            return Err("the workload did not finish in 30 s".into());
        }
        match q.poll(Duration::from_millis(20)) {
            Ok(o) => outs.extend(o),
            Err(e) => {
                result = Err(format!("poll failed:\n{}", e.render(sql)));
                break;
            }
        }
    }
    if let Err(e) = result {
        let _ = w.child.kill();
        let _ = w.child.wait();
        return Err(e);
    }
    outs.extend(q.finish().map_err(|e| format!("finish (detach) failed:\n{}", e.render(sql)))?);
    let stats = q.stats().map_err(|e| format!("stats failed:\n{}", e.render(sql)))?;
    drop(q);
    let report = w.report();
    let rows = rows_of(&outs);
    Ok((Run { outs, rows, stats, report }, is_rows))
}

fn check_run(case: &Case, run: &Run, is_rows: bool) {
    let st = run.stats;
    assert!(st.matched <= st.seen, "stats: matched > seen: {st:?}");
    assert!(st.dropped <= st.matched, "stats: dropped > matched: {st:?}");
    if is_rows {
        assert_eq!(run.rows.len() as u64, st.delivered, "row count differs from stats.delivered: {st:?}");
        assert_eq!(st.delivered + st.dropped, st.matched, "row query: delivered + dropped != matched: {st:?}");
    }
    if case.nonempty {
        assert!(!run.rows.is_empty(), "expected rows (the workload causes these events), got none; stats {st:?}");
    }
    if let Some(c) = case.check {
        c(run);
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// Runs every case; fails at the end listing each failing query and why.
fn run_table(comm: &str, cases: Vec<Case>) {
    let mut failures = vec![];
    let t0 = Instant::now();
    for case in &cases {
        let sql = case.sql.replace("{comm}", comm);
        let t = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<usize, String> {
            let (run, is_rows) = run_case(&sql, case.load, comm)?;
            check_run(case, &run, is_rows);
            Ok(run.rows.len())
        }));
        match outcome {
            Ok(Ok(n)) => eprintln!("ok   {:>5} ms {n:>6} rows  {sql}", t.elapsed().as_millis()),
            Ok(Err(e)) => failures.push(format!("query: {sql}\n{e}")),
            Err(p) => failures.push(format!("query: {sql}\npanicked: {}", panic_message(&*p))),
        }
    }
    eprintln!("{} queries in {:.1} s", cases.len(), t0.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{} of {} queries failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// Syscall tracepoints (the workload reads /dev/zero 2000 times), system
/// columns, every aggregate, string filters, arithmetic and all spellings.
fn syscall_cases() -> Vec<Case> {
    use Load::*;
    vec![
        some("SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE comm = '{comm}'", ReadZero)
            .check(|r| assert_eq!(total(r, "n"), 2000)),
        // A tautology is the user's to write (clang's warning about it is off; the props soak found it).
        some(
            "SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE comm = '{comm}' AND (comm <> '' OR '' = comm) \
             AND (fd > 1 OR fd < 5)",
            ReadZero,
        )
        .check(|r| assert_eq!(total(r, "n"), 2000)),
        // tracepoint: spelling, every aggregate, a string group key.
        some(
            "SELECT comm, COUNT(*) AS n, SUM(count) AS total, MIN(count) AS lo, MAX(count) AS hi, AVG(count) AS mean \
             FROM tracepoint:syscalls:sys_enter_read WHERE comm = '{comm}' GROUP BY comm",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 1);
            let row = &r.rows[0];
            assert_eq!(s(row, "comm"), "ebqv-sys");
            assert_eq!((u(row, "n"), u(row, "total"), u(row, "lo"), u(row, "hi")), (2000, 2000, 1, 1));
            assert_eq!(f(row, "mean"), 1.0);
        }),
        // tracepoint/ spelling; a row query over every system column.
        some(
            "SELECT time, pid, tid, uid, gid, comm, cpu, cgroup FROM tracepoint/syscalls/sys_enter_read \
             WHERE comm = '{comm}'",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2000);
            let pid = report_u64(r, "pid");
            for row in &r.rows {
                assert!(u(row, "time") > 0 && u(row, "cgroup") > 0, "{row:?}");
                assert_eq!((u(row, "pid"), u(row, "tid")), (pid, pid), "{row:?}");
                assert_eq!((u(row, "uid"), u(row, "gid")), (0, 0), "{row:?}");
                assert_eq!(s(row, "comm"), "ebqv-sys");
                assert!(u(row, "cpu") < 4096);
            }
            let times: Vec<u64> = r.rows.iter().map(|row| u(row, "time")).collect();
            assert!(times.windows(2).all(|w| w[0] <= w[1]), "one thread's events arrive in time order");
        }),
        // syscalls/NAME spelling; eBQL clause order: GROUP BY before WHERE.
        some("SELECT fd, COUNT(*) AS n FROM syscalls/sys_enter_read GROUP BY fd WHERE comm = '{comm}'", ReadZero)
            .check(|r| {
                assert_eq!(r.rows.len(), 1);
                assert_eq!(u(&r.rows[0], "n"), 2000);
            }),
        // Lower-case keywords; LIKE without % is an exact match.
        some("select count(*) as n from syscalls.sys_enter_read where comm like '{comm}'", ReadZero)
            .check(|r| assert_eq!(total(r, "n"), 2000)),
        // Literal on the left; SELECT *.
        some("SELECT * FROM syscalls.sys_enter_read WHERE '{comm}' = comm AND count = 1", ReadZero).check(|r| {
            assert_eq!(r.rows.len(), 2000);
            for c in ["__syscall_nr", "fd", "buf", "count"] {
                assert!(r.rows[0].contains_key(c), "SELECT * lacks {c}: {:?}", r.rows[0]);
            }
        }),
        some("SELECT ret, COUNT(*) AS n FROM syscalls.sys_exit_read WHERE comm = '{comm}' GROUP BY ret", ReadZero)
            .check(|r| {
                assert_eq!(r.rows.len(), 1);
                assert_eq!((i(&r.rows[0], "ret"), u(&r.rows[0], "n")), (1, 2000));
            }),
        // Arithmetic of every kind, including negative literals and x / 0, x % 0.
        // Shifts: logical for unsigned, arithmetic for signed, 0 past 63 bits.
        some(
            "SELECT fd, count * 2 + 1 AS c2, (fd + 100) / 3 AS q, fd % 3 AS r, -fd AS neg, fd ^ 1 AS x, fd | 8 AS o, \
             fd & 1 AS a, fd / 0 AS d0, fd % 0 AS m0, -7 / 2 AS nd, -7 % 3 AS nm, count - 3 AS wrap, \
             fd << 4 AS shl, (fd + 64) >> 3 AS shr, -8 >> 1 AS sar, count << 70 AS shl_far \
             FROM syscalls.sys_enter_read WHERE comm = '{comm}' AND count - 2 = -1 AND count * 1000 > 999 \
             AND (count << 2) >> 1 = 2",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2000);
            let row = &r.rows[0];
            let fd = i(row, "fd");
            assert_eq!(i(row, "c2"), 3);
            assert_eq!(i(row, "q"), (fd + 100) / 3);
            assert_eq!(i(row, "r"), fd % 3);
            assert_eq!(i(row, "neg"), -fd);
            assert_eq!(i(row, "x"), fd ^ 1);
            assert_eq!(i(row, "o"), fd | 8);
            assert_eq!(i(row, "a"), fd & 1);
            assert_eq!(i(row, "shl"), fd << 4);
            assert_eq!(i(row, "shr"), (fd + 64) >> 3);
            assert_eq!(i(row, "sar"), -4, "signed >> is arithmetic");
            assert_eq!(i(row, "shl_far"), 0, "shifts past 63 give 0");
            assert_eq!(i(row, "d0"), 0, "x / 0 is 0");
            assert_eq!(i(row, "m0"), fd, "x % 0 is x");
            assert_eq!(i(row, "nd"), -3, "signed division truncates toward zero");
            assert_eq!(i(row, "nm"), -1);
            assert_eq!(u(row, "wrap"), u64::MAX - 1, "unsigned arithmetic wraps: 1 - 3");
        }),
        // NOT, BETWEEN, NOT BETWEEN, IN, NOT IN, booleans.
        some(
            "SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE comm = '{comm}' AND NOT (fd BETWEEN 0 AND 2) \
             AND count NOT BETWEEN 2 AND 100 AND fd IN (3, 4, 5, 6, 7, 8, 9, 10) AND fd NOT IN (0, 1, 2) \
             AND (count = 1) = TRUE AND NOT FALSE",
            ReadZero,
        )
        .check(|r| assert_eq!(total(r, "n"), 2000)),
        // Alias qualifier, event-name qualifier.
        some(
            "SELECT r.fd, COUNT(*) AS n FROM syscalls.sys_enter_read AS r \
             WHERE r.comm = '{comm}' AND sys_enter_read.count = 1 GROUP BY r.fd",
            ReadZero,
        )
        .check(|r| assert_eq!(total(r, "n"), 2000)),
        // System columns as group keys.
        some(
            "SELECT cgroup, uid, gid, cpu, pid, tid, COUNT(*) AS n FROM syscalls.sys_enter_read \
             WHERE comm = '{comm}' GROUP BY cgroup, uid, gid, cpu, pid, tid",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(total(r, "n"), 2000);
            assert!(r.rows.iter().all(|row| u(row, "pid") == report_u64(r, "pid")));
        }),
        // Multi-line query with a comment; a GROUP BY key not selected.
        some(
            "SELECT\n  COUNT(*) AS n, -- every read\n  MAX(time) AS last\nFROM syscalls.sys_enter_read\n\
             WHERE comm = '{comm}'\nGROUP BY fd\n",
            ReadZero,
        )
        .check(|r| assert_eq!(total(r, "n"), 2000)),
        // Count windows: 2000 reads in windows of 500; WINDOW before WHERE.
        some("SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WINDOW(count, 500, 500) WHERE comm = '{comm}'", ReadZero)
            .check(|r| {
                let n: Vec<u64> = r.rows.iter().map(|row| u(row, "n")).collect();
                assert_eq!(n, vec![500, 500, 500, 500]);
            }),
        some(
            "SELECT ret, MAX(ret) AS m, MIN(ret) AS lo FROM syscalls.sys_exit_read \
             WINDOW(count, 1000, 1000) WHERE comm = '{comm}' GROUP BY ret",
            ReadZero,
        )
        .check(|r| assert!(windows(r) >= 2, "2000 events make two count windows of 1000")),
        // Time windows.
        some(
            "SELECT tid % 2 AS parity, COUNT(*) AS n FROM syscalls.sys_exit_read WHERE comm = '{comm}' \
             GROUP BY parity WINDOW(time, 30, 30)",
            ReadZero,
        )
        .check(|r| {
            assert!(windows(r) >= 3, "150 ms make at least 3 windows of 30 ms, got {}", windows(r));
            assert_eq!(total(r, "n"), 2000);
        }),
        some(
            "SELECT dfd, flags & 3 AS acc, COUNT(*) AS n FROM syscalls.sys_enter_openat \
             WHERE comm = '{comm}' GROUP BY dfd, acc",
            ReadZero,
        )
        .check(|r| assert!(r.rows.iter().any(|row| u(row, "acc") == 0), "/dev/zero is opened O_RDONLY")),
        some("SELECT ret FROM syscalls.sys_exit_openat WHERE comm = '{comm}' AND ret >= 0", ReadZero),
        some("SELECT fd, COUNT(*) AS n FROM syscalls.sys_enter_close WHERE comm = '{comm}' GROUP BY fd", ReadZero),
        some(
            "SELECT which_clock, flags, COUNT(*) AS n FROM syscalls.sys_enter_clock_nanosleep \
             WHERE comm = '{comm}' GROUP BY which_clock, flags",
            ReadZero,
        ),
        some(
            "SELECT fd, COUNT(*) AS n, SUM(count) AS bytes, AVG(count) AS avg FROM syscalls.sys_enter_pread64 \
             WHERE comm = '{comm}' AND pos = 0 GROUP BY fd WINDOW(count, 25, 25)",
            Pread,
        )
        .check(|r| {
            assert_eq!(total(r, "n"), 100);
            assert_eq!(windows(r), 4);
        }),
        // raw_syscalls with int array elements (x86_64: read is syscall 0).
        some(
            "SELECT id, COUNT(*) AS n FROM raw_syscalls.sys_enter \
             WHERE comm = '{comm}' AND args[2] = 1 AND id IN (0, 17) GROUP BY id",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 1);
            assert_eq!((i(&r.rows[0], "id"), u(&r.rows[0], "n")), (0, 2000));
        }),
        some(
            "SELECT args[0] AS fd, args[1] % 4096 AS off, args[5], COUNT(*) AS n FROM raw_syscalls.sys_enter \
             WHERE id = 0 AND comm = '{comm}' GROUP BY fd, off, args[5]",
            ReadZero,
        ),
        some("SELECT id, ret FROM raw_syscalls.sys_exit WHERE comm = '{comm}' AND id = 0 AND ret = 1", ReadZero)
            .check(|r| assert_eq!(r.rows.len(), 2000)),
        any("SELECT COUNT(*) AS n, MIN(time) AS first, MAX(time) AS last FROM raw_syscalls.sys_enter WINDOW(time, 40, 40)", ReadZero)
            .check(|r| {
                assert!(windows(r) >= 3, "150 ms make at least 3 windows of 40 ms, got {}", windows(r));
                for row in r.rows.iter().filter(|row| u(row, "n") > 0) {
                    assert!(u(row, "first") <= u(row, "last"), "{row:?}");
                }
            }),
    ]
}

/// Histograms and quantiles (issue 3): in-kernel buckets with exact counts.
fn histogram_cases() -> Vec<Case> {
    use Load::*;
    vec![
        // Pread: 2 × 50 calls of 64, 128, 192, 256, 320 bytes (20 each).
        some(
            "SELECT HIST(count) AS h, LHIST(count, 0, 1000, 100) AS l, P50(count) AS p50, P99(count) AS p99, \
             COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'",
            Pread,
        )
        .check(|r| {
            let row = &r.rows[0];
            assert_eq!(u(row, "n"), 100);
            let counts = |col: &str| match row.get(col) {
                Some(Value::Hist(b)) => b.iter().map(|b| (b.lo, b.hi, b.count)).collect::<Vec<_>>(),
                other => panic!("{col}: {other:?}"),
            };
            assert_eq!(counts("h"), [(64, 128, 20), (128, 256, 40), (256, 512, 40)]);
            assert_eq!(counts("l"), [(0, 100, 20), (100, 200, 40), (200, 300, 20), (300, 400, 20)]);
            // Nearest rank: the 50th value is 192 (scale-6 bucket 485, (2^(485/64), 2^(486/64)], holds
            // 192 and 193: the middle integer is 192), the 99th 320 (bucket 532 holds 318..=321: 319).
            assert_eq!((u(row, "p50"), u(row, "p99")), (192, 319));
            assert_eq!(ebq::hist::sketch_bounds(ebq::hist::sketch_index(320)), (318, 322));
        }),
        // ReadZero: every read returns 1; grouped, sliding windows, ordered by a quantile.
        some(
            "SELECT cpu, HIST(ret) AS h, QUANTILE(ret, 0.5) AS med, COUNT(*) AS n FROM syscalls.sys_exit_read \
             WHERE comm = '{comm}' GROUP BY cpu WINDOW(time, 60, 30) ORDER BY med DESC, n",
            ReadZero,
        )
        .check(|r| {
            for row in &r.rows {
                assert_eq!(
                    row.get("h"),
                    Some(&Value::Hist(vec![ebq::hist::Bucket { lo: 1, hi: 2, count: u(row, "n") }]))
                );
                assert_eq!(row.get("med"), Some(&Value::I(1)));
            }
        }),
        // HAVING and ORDER BY on quantiles, a histogram of an expression per fd.
        some(
            "SELECT fd, HIST(count / 64) AS h, P90(count) AS p90 FROM syscalls.sys_enter_pread64 \
             WHERE comm = '{comm}' GROUP BY fd HAVING P90(count) > 100 ORDER BY P50(count), fd",
            Pread,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2);
            for row in &r.rows {
                assert_eq!(u(row, "p90"), 319, "320's bucket, 318..=321");
                let Some(Value::Hist(h)) = row.get("h") else { panic!("{row:?}") };
                let counts: Vec<(i128, u64)> = h.iter().map(|b| (b.lo, b.count)).collect();
                assert_eq!(counts, [(1, 10), (2, 20), (4, 20)], "count / 64 is 1..=5");
            }
        }),
    ]
}

/// Scheduler, task and signal tracepoints (the workload forks 3 children):
/// char array and __data_loc strings as keys and filters.
fn sched_cases() -> Vec<Case> {
    use Load::*;
    vec![
        some(
            "SELECT prev_comm, next_comm, COUNT(*) AS n FROM sched.sched_switch \
             WHERE prev_comm = '{comm}' GROUP BY prev_comm, next_comm",
            Fork,
        )
        .check(|r| assert!(r.rows.iter().all(|row| s(row, "prev_comm") == "ebqv-sched"))),
        some(
            "SELECT prev_pid, next_pid, prev_prio, next_prio, prev_state, next_comm FROM sched.sched_switch \
             WHERE prev_comm LIKE 'ebqv-sch%' OR next_comm LIKE 'ebqv-sch%'",
            Fork,
        ),
        any(
            "SELECT cpu, COUNT(*) AS n FROM sched.sched_switch WHERE next_comm != 'swapper/0' \
             AND prev_comm NOT LIKE 'kworker%' GROUP BY cpu WINDOW(time, 40, 40)",
            Fork,
        )
        .check(|r| assert!(windows(r) >= 3)),
        some(
            "SELECT parent_comm, child_comm, COUNT(*) AS n FROM sched.sched_process_fork \
             WHERE parent_comm = '{comm}' GROUP BY parent_comm, child_comm",
            Fork,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 1);
            assert_eq!(s(&r.rows[0], "child_comm"), "ebqv-sched");
            assert_eq!(u(&r.rows[0], "n"), 3);
        }),
        some(
            "SELECT parent_pid, child_pid, child_comm FROM tp:sched:sched_process_fork \
             WHERE starts_with(child_comm, 'ebqv-sch') AND parent_comm != 'nobody'",
            Fork,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 3);
            let parent = report_u64(r, "pid") as i64;
            assert!(r.rows.iter().all(|row| i(row, "parent_pid") == parent && i(row, "child_pid") != parent));
        }),
        some(
            "SELECT filename, COUNT(*) AS n FROM sched.sched_process_exec WHERE filename LIKE '/%' GROUP BY filename",
            Fork,
        )
        .check(|r| {
            assert!(r.rows.iter().any(|row| s(row, "filename").ends_with("/ebq-workload")), "{:?}", r.rows);
        }),
        some("SELECT comm, pid, prio, group_dead FROM sched.sched_process_exit WHERE comm = '{comm}'", Fork)
            .check(|r| assert!(r.rows.len() >= 4, "3 children and the parent exit: {:?}", r.rows)),
        some("SELECT comm, pid, prio FROM sched.sched_process_wait WHERE comm = '{comm}'", Fork),
        some(
            "SELECT target_cpu, COUNT(*) AS n FROM sched.sched_wakeup WHERE comm = '{comm}' \
             AND prio BETWEEN 0 AND 139 GROUP BY target_cpu",
            Fork,
        ),
        some(
            "SELECT comm, oom_score_adj, clone_flags & 255 AS exit_signal, COUNT(*) AS n FROM task.task_newtask \
             WHERE comm = '{comm}' GROUP BY comm, oom_score_adj, exit_signal",
            Fork,
        )
        .check(|r| {
            // glibc's fork uses clone3, whose exit signal is not part of the flags.
            assert_eq!(total(r, "n"), 3);
        }),
        some(
            "SELECT sig, errno, code, result, COUNT(*) AS n FROM signal.signal_generate \
             WHERE comm = '{comm}' AND sig = 17 GROUP BY sig, errno, code, result",
            Fork,
        )
        .check(|r| assert_eq!(total(r, "n"), 3, "one SIGCHLD per child")),
        some(
            "SELECT comm, COUNT(*) AS n, SUM(count) AS bytes FROM syscalls.sys_enter_pread64 \
             WHERE comm = '{comm}' GROUP BY comm",
            Fork,
        )
        .check(|r| assert_eq!((total(r, "n"), total(r, "bytes")), (15, 15))),
    ]
}

/// Other subsystems: irq, timer, kmem, filemap, writeback, ext4, block,
/// workqueue, kvm (integers of 1, 2, 4 and 8 bytes, signed and unsigned).
fn subsystem_cases() -> Vec<Case> {
    use Load::*;
    vec![
        any("SELECT vec, COUNT(*) AS n FROM irq.softirq_entry GROUP BY vec WINDOW(time, 50, 50)", Pread)
            .check(|r| assert!(windows(r) >= 2)),
        any("SELECT name, irq, COUNT(*) AS n FROM irq.irq_handler_entry WHERE irq >= 0 GROUP BY name, irq", Pread),
        // u8 (bool), u32 (enum), i64 arithmetic; the workload sleeps, arming an hrtimer.
        some(
            "SELECT was_armed, mode, COUNT(*) AS n, MIN(expires - softexpires) AS slack FROM timer.hrtimer_start \
             WHERE comm = '{comm}' GROUP BY was_armed, mode",
            Pread,
        ),
        any(
            "SELECT flags >> 18 AS idx, COUNT(*) AS n FROM timer.timer_start WHERE expires > now - 1000 GROUP BY idx",
            Pread,
        ),
        // Negative literal against an i32.
        any(
            "SELECT bytes_alloc / 64 AS bucket, SUM(bytes_alloc - bytes_req) AS waste, MAX(bytes_req) AS biggest, \
             COUNT(*) AS n FROM kmem.kmalloc WHERE node >= -1 GROUP BY bucket",
            Pread,
        ),
        any("SELECT COUNT(*) AS n FROM kmem.kfree WHERE ptr != 0 WINDOW(count, 100, 100)", Pread),
        // A column named like a keyword, quoted and bare.
        some(
            "SELECT \"order\", migratetype, COUNT(*) AS n FROM kmem.mm_page_alloc WHERE comm = '{comm}' \
             GROUP BY \"order\", migratetype",
            Pread,
        ),
        some(
            "SELECT s_dev, COUNT(*) AS n, MAX(i_ino) AS ino, MIN(order) AS o FROM filemap.mm_filemap_add_to_page_cache \
             WHERE comm = '{comm}' AND index % 2 = 0 GROUP BY s_dev",
            Pread,
        ),
        any(
            "SELECT name, COUNT(*) AS n FROM writeback.writeback_dirty_inode WHERE name != '' GROUP BY name",
            Pread,
        ),
        // starts_with and NOT LIKE on the comm system column.
        some(
            "SELECT dev, ino, pos, len FROM ext4.ext4_da_write_begin \
             WHERE starts_with(comm, 'ebqv-mi') AND comm NOT LIKE 'ebqv-sys%' AND len > 0",
            Pread,
        ),
        // u16 filter; dev_t split into major/minor.
        any(
            "SELECT rwbs, dev >> 20 AS major, dev & 1048575 AS minor, SUM(bytes) AS bytes, COUNT(*) AS n \
             FROM block.block_rq_issue WHERE ioprio >= 0 GROUP BY rwbs, major, minor",
            Pread,
        ),
        any(
            "SELECT cmd, error, nr_sector, sector FROM block.block_rq_complete WHERE error = 0 OR error < -1",
            Pread,
        ),
        any(
            "SELECT workqueue, req_cpu, cpu, COUNT(*) AS n FROM workqueue.workqueue_queue_work \
             WHERE starts_with(workqueue, 'events') GROUP BY workqueue, req_cpu, cpu",
            Pread,
        ),
        // i8.
        any(
            "SELECT tsc_shift, flags, COUNT(*) AS n FROM kvm.kvm_pvclock_update \
             WHERE tsc_shift < -2 OR tsc_shift > 2 GROUP BY tsc_shift, flags",
            Pread,
        ),
    ]
}

/// File columns (issue 3): the file behind the fd, read with CO-RE.
fn file_cases() -> Vec<Case> {
    use Load::*;
    vec![
        // /dev/zero: devtmpfs mounted at /dev.
        some(
            "SELECT fs_type, mount_point, file_name, COUNT(*) AS n FROM syscalls.sys_enter_read \
             WHERE comm = '{comm}' GROUP BY fs_type, mount_point, file_name",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 1, "{:?}", r.rows);
            let row = &r.rows[0];
            assert_eq!(
                (s(row, "fs_type"), s(row, "mount_point"), s(row, "file_name")),
                ("devtmpfs".into(), "/dev".into(), "zero".into())
            );
            assert_eq!(u(row, "n"), 2000);
        }),
        // Every file column in a row query; reads of /dev/zero leave f_pos at 0.
        some(
            "SELECT inode, dev, dev_major, dev_minor, fs_type, mount_point, mount_id, file_name, file_pos \
             FROM syscalls.sys_enter_read WHERE comm = '{comm}' AND file_name = 'zero'",
            ReadZero,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2000);
            use std::os::unix::fs::MetadataExt;
            let zero = std::fs::metadata("/dev/zero").unwrap();
            for row in &r.rows {
                assert_eq!(u(row, "inode"), zero.ino());
                assert_eq!(u(row, "dev"), u(row, "dev_major") << 20 | u(row, "dev_minor"));
                assert_eq!(u(row, "file_pos"), 0);
            }
        }),
        // Two 1 MiB files on the root ext4: 50 preads each, counted per inode.
        some(
            "SELECT file_name, inode, COUNT(*) AS n FROM syscalls.sys_enter_pread64 \
             WHERE comm = '{comm}' AND fs_type = 'ext4' AND mount_point = '/' GROUP BY file_name, inode",
            Pread,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2, "{:?}", r.rows);
            assert!(r.rows.iter().all(|row| u(row, "n") == 50 && s(row, "file_name").starts_with("ebq-workload-")));
        }),
        some("SELECT COUNT(DISTINCT inode) AS files FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}'", Pread)
            .check(|r| assert_eq!(total(r, "files"), 2)),
        some(
            "SELECT file_name, fs_type, file_pos FROM syscalls.sys_exit_openat WHERE ret >= 0 AND comm = '{comm}' \
             AND file_name LIKE 'ebq-workload-%'",
            Pread,
        )
        .check(|r| assert_eq!(r.rows.len(), 2)),
        any(
            "SELECT fs_type, dev_major, COUNT(*) AS n, MAX(file_pos) AS far FROM syscalls.sys_enter_write \
             GROUP BY fs_type, dev_major WINDOW(time, 100, 100)",
            Pread,
        ),
        any("SELECT mount_point, COUNT(*) AS n FROM syscalls.sys_enter_close GROUP BY mount_point", Pread),
        any("SELECT file_name, inode FROM syscalls.sys_enter_fsync WHERE inode != 0", Pread),
        // A JOIN carrying file columns from the enter event to the exit event.
        some(
            "SELECT e.file_name, COUNT(*) AS n, SUM(x.ret) AS bytes FROM syscalls.sys_enter_pread64 e \
             JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid \
             WHERE e.comm = '{comm}' AND e.fs_type = 'ext4' GROUP BY e.file_name",
            Pread,
        )
        .check(|r| {
            assert_eq!(r.rows.len(), 2, "{:?}", r.rows);
            assert!(r.rows.iter().all(|row| u(row, "n") == 50 && s(row, "file_name").starts_with("ebq-workload-")));
        }),
    ]
}

/// JOINs: enter→exit pairing in the kernel, as rows and aggregates, with
/// start-side and end-side filters, strings carried across, windows.
fn join_cases() -> Vec<Case> {
    use Load::*;
    vec![
        some(
            "SELECT COUNT(*) AS n, SUM(x.ret) AS bytes FROM syscalls.sys_enter_read e \
             JOIN syscalls.sys_exit_read x ON e.tid = x.tid WHERE e.comm = '{comm}'",
            ReadZero,
        )
        .check(|r| assert_eq!((total(r, "n"), total(r, "bytes")), (2000, 2000))),
        some(
            "SELECT e.comm, e.fd, x.ret, x.time - e.time AS lat FROM syscalls.sys_enter_pread64 e \
             JOIN syscalls.sys_exit_pread64 x ON x.tid = e.tid WHERE starts_with(e.comm, 'ebqv') AND x.ret > 0",
            Pread,
        )
        .check(|r| assert_eq!(r.rows.len(), 100)),
        some(
            "SELECT e.comm AS who, MAX(x.time - e.time) AS worst, COUNT(*) AS n \
             FROM tracepoint:syscalls:sys_enter_read e JOIN tracepoint:syscalls:sys_exit_read x \
             ON e.tid = x.tid AND e.pid = x.pid WHERE e.comm = '{comm}' AND x.ret = 1 GROUP BY who \
             WINDOW(time, 100, 50)",
            ReadZero,
        ),
        any(
            "SELECT i.rwbs, c.error, COUNT(*) AS n, AVG(c.time - i.time) AS mean \
             FROM block.block_rq_issue i JOIN block.block_rq_complete c \
             ON i.dev = c.dev AND i.sector = c.sector GROUP BY i.rwbs, c.error",
            Pread,
        ),
        any(
            "SELECT COUNT(*) FROM sched.sched_wakeup w JOIN sched.sched_switch s ON w.pid = s.next_pid \
             WINDOW(count, 100)",
            Fork,
        ),
    ]
}

/// uprobes on libc (found by its bare name), filtered to the workload's comm.
fn probe_cases() -> Vec<Case> {
    use Load::*;
    vec![
        some("SELECT COUNT(*) AS n, SUM(arg2) AS bytes FROM uprobe:libc:read WHERE comm = '{comm}'", ReadZero).check(
            |r| {
                assert_eq!(total(r, "n"), report_u64(r, "total_calls"));
                assert_eq!(total(r, "bytes"), report_u64(r, "total_bytes"));
            },
        ),
        some("SELECT tid, retval FROM uretprobe:libc:read WHERE comm = '{comm}' AND retval = 1", ReadZero)
            .check(|r| assert_eq!(r.rows.len() as u64, report_u64(r, "total_calls"))),
        some(
            "SELECT arg0 AS fd, COUNT(*) AS n, MAX(arg2) AS biggest FROM uprobe:libc.so.6:pread64 \
             WHERE comm = '{comm}' GROUP BY fd ORDER BY fd",
            Pread,
        )
        .check(|r| assert_eq!(total(r, "n"), report_u64(r, "total_calls"))),
        any(
            "SELECT retval, COUNT(*) AS n FROM uretprobe:libc:pread64 WHERE comm = '{comm}' GROUP BY retval \
             WINDOW(time, 50, 50)",
            Pread,
        ),
    ]
}

#[test]
fn file_column_queries() {
    run_table("ebqv-file", file_cases());
}

#[test]
fn join_queries() {
    run_table("ebqv-join", join_cases());
}

#[test]
fn probe_queries() {
    run_table("ebqv-probe", probe_cases());
}

#[test]
fn syscall_queries() {
    run_table("ebqv-sys", syscall_cases());
}

#[test]
fn histogram_queries() {
    run_table("ebqv-hist", histogram_cases());
}

#[test]
fn sched_task_signal_queries() {
    run_table("ebqv-sched", sched_cases());
}

#[test]
fn subsystem_queries() {
    run_table("ebqv-misc", subsystem_cases());
}

#[test]
fn table_covers_enough() {
    let all: Vec<Case> = syscall_cases()
        .into_iter()
        .chain(sched_cases())
        .chain(subsystem_cases())
        .chain(histogram_cases())
        .chain(file_cases())
        .collect();
    let events: std::collections::BTreeSet<String> = all
        .iter()
        .map(|c| format!("{}", engine().prepare(&c.sql.replace("{comm}", "x")).unwrap().logical.event.name))
        .collect();
    assert!(all.len() >= 35, "{} queries", all.len());
    assert!(events.len() >= 15, "{} events: {events:?}", events.len());
}
