//! Issue 3: uprobes and uretprobes on real binaries, counted exactly.
//!
//! libc's `pread64` and `read` are driven by the workload (whose report says
//! how many calls and bytes it issued); `MPI_File_write_at` lives in a small
//! MPI-IO stand-in library built here from `fakempiio/*.c`, called by a driver
//! with known offsets and sizes. Every query is scoped to the traced process
//! (`Scope::Process`, which also restricts the uprobe itself to its mappings).

use crate::common;

use common::{
    assert_exact_or_accounted, assert_keyed_exact_or_accounted, assert_map_exact_or_accounted, lost, rows_of,
    run_around, u, Row,
};
use ebq::{Output, QueryStats, RunningQuery, Scope};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A signed integer cell.
fn i(row: &Row, col: &str) -> i64 {
    match row.get(col) {
        Some(ebq::runtime::Value::I(v)) => *v,
        other => panic!("column {col}: expected a signed integer, got {other:?}"),
    }
}

/// The only row of an ungrouped aggregate.
fn single(outs: &[Output]) -> Row {
    let rows = rows_of(outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    rows.into_iter().next().unwrap()
}

/// Accounting (uprobes run behind the same per-CPU guard as tracepoint programs, so
/// another tracer can make the kernel skip them): `counted` + dropped + missed (+ JOIN
/// losses) = `truth`, exact when nothing was lost; then `exact` (sums, extremes) holds too.
fn counted_then_exact(counted: u64, truth: u64, stats: &ebq::QueryStats, what: &str, exact: impl FnOnce()) {
    assert_exact_or_accounted(counted, truth, stats, what);
    if lost(stats) == 0 {
        exact();
    }
}

fn libc_path() -> String {
    ebq::host::elf::resolve_binary("libc").expect("libc").display().to_string()
}

#[test]
fn libc_pread64_uprobe_counts_calls_and_bytes() {
    let workload = &["pread", "--fds", "2", "--calls", "30,12", "--comm", "wl-upread"];
    let sql = format!("SELECT COUNT(*), SUM(arg2), MAX(arg2) FROM uprobe:{}:pread64", libc_path());
    // -p (the uprobe attached to that process) and -c (attached everywhere, the
    // program keeps the tracked processes).
    let scopes: [fn(u32) -> Scope; 2] = [Scope::Process, |pid| Scope::Tracked(vec![pid])];
    for scope in scopes {
        let (outs, stats, report) = run_around(&sql, scope, workload);
        let row = single(&outs);
        // Accounting (one event, aggregate): calls + dropped + missed = the workload's 42.
        counted_then_exact(u(&row, "COUNT(*)"), report["total_calls"].as_u64().unwrap(), &stats, "preads", || {
            assert_eq!(u(&row, "SUM(arg2)"), report["total_bytes"].as_u64().unwrap());
            assert_eq!(u(&row, "MAX(arg2)"), report["fds"][0]["max"].as_u64().unwrap());
        });
        assert_exact_or_accounted(stats.seen, 42, &stats, "seen");
    }
}

#[test]
fn libc_pread64_uretprobe_sums_bytes_read_by_bare_library_name() {
    let workload = &["pread", "--fds", "3", "--calls", "7,8,9", "--comm", "wl-uretpread"];
    let (outs, stats, report) =
        run_around("SELECT COUNT(*), SUM(retval) FROM uretprobe:libc:pread64", Scope::Process, workload);
    let row = single(&outs);
    assert_eq!(report["total_calls"].as_u64(), Some(24), "the workload's own tally");
    // Accounting (one event, aggregate): returns + dropped + missed = the workload's 24.
    counted_then_exact(u(&row, "COUNT(*)"), 24, &stats, "pread64 returns", || {
        assert_eq!(u(&row, "SUM(retval)"), report["total_bytes"].as_u64().unwrap());
    });
}

#[test]
fn libc_read_uprobe_rows_carry_system_columns() {
    let workload = &["readzero", "--count", "300", "--bs", "24", "--comm", "wl-uread"];
    let sql = "SELECT pid, tid, comm, arg0, arg2 FROM uprobe:libc.so.6:read";
    let (outs, stats, report) = run_around(sql, Scope::Process, workload);
    let rows = rows_of(&outs);
    // Accounting (rows): rows + dropped + missed = the workload's 300 reads.
    assert_exact_or_accounted(rows.len() as u64, report["total_calls"].as_u64().unwrap(), &stats, "read rows");
    assert_eq!(stats.delivered, rows.len() as u64, "{stats:?}");
    let pid = report["pid"].as_u64().unwrap();
    for r in &rows {
        assert_eq!((u(r, "pid"), u(r, "tid")), (pid, pid));
        assert_eq!(common::s(r, "comm"), "wl-uread");
        assert_eq!((u(r, "arg0"), u(r, "arg2")), (report["fd"].as_u64().unwrap(), 24));
    }
}

#[test]
fn one_uprobe_over_a_list_of_libc_functions_pairs_each_call_with_its_return() {
    // `uprobe:libc:{pread64,pwrite64}`: one uprobe_multi link per side, `func` the
    // function's position in the list (its cookie); pairing on (tid, func).
    let dir = std::env::temp_dir().join(format!("ebq-umulti-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = format!("{},{}", dir.join("a").display(), dir.join("b").display());
    let workload =
        &["fileio", "--files", &files, "--writes", "4,6", "--reads", "3,5", "--size", "700", "--comm", "wl-umulti"];
    let list = "{pread64,pwrite64}";
    let sql = format!(
        "SELECT e.func AS f, COUNT(*) AS n, SUM(x.retval) AS bytes FROM uprobe:libc:{list} e \
         JOIN uretprobe:libc:{list} x ON e.tid = x.tid AND e.func = x.func GROUP BY e.func"
    );
    let (outs, stats, report) = run_around(&sql, Scope::Process, workload);
    let _ = std::fs::remove_dir_all(&dir);
    let got: Vec<(u64, u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "f"), u(r, "n"), u(r, "bytes"))).collect();
    // (calls, bytes) of one kind over the files, each file's calls of its own size.
    let sum = |k: &str| {
        let files = report["files"].as_array().unwrap();
        let n = |f: &serde_json::Value| f[k].as_u64().unwrap();
        (files.iter().map(n).sum::<u64>(), files.iter().map(|f| n(f) * f["size"].as_u64().unwrap()).sum::<u64>())
    };
    let ((preads, read), (pwrites, written)) = (sum("preads"), sum("pwrites"));
    assert!(preads > 0 && pwrites > 0, "{report}");
    let got: BTreeMap<u64, (u64, u64)> = got.into_iter().map(|(f, n, b)| (f, (n, b))).collect();
    // Accounting (JOIN): pairs per function + dropped + missed ends/starts + open + superseded
    // = the workload's calls; (pairs, bytes) exact when nothing was lost.
    let want: BTreeMap<u64, (u64, u64)> = [(0, (preads, read)), (1, (pwrites, written))].into();
    assert_keyed_exact_or_accounted(&got, &want, |v| v.0, &stats, &format!("{report}"));
}

/// The MPI-IO stand-in library and its drivers (PIE and non-PIE), built once.
struct FakeMpi {
    dir: PathBuf,
}

impl FakeMpi {
    fn build() -> FakeMpi {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fakempiio");
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ebq-fakempiio-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cc = |args: &[&str]| {
            let out =
                Command::new("cc").args(args).current_dir(&dir).output().expect("cc (a C compiler) must be installed");
            assert!(out.status.success(), "cc {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        };
        let lib = src.join("fakempiio.c");
        let driver = src.join("driver.c");
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        // -O0: no clones (`block_sum.constprop.0`) or inlining of the traced functions.
        cc(&["-O0", "-shared", "-fPIC", "-o", "libfakempiio.so", lib.to_str().unwrap()]);
        for (name, pie) in [("driver-pie", "-pie"), ("driver-nopie", "-no-pie")] {
            let fpie = if pie == "-pie" { "-fPIE" } else { "-fno-pie" };
            cc(&["-O0", fpie, pie, "-o", name, driver.to_str().unwrap(), "-L.", "-lfakempiio", &rpath]);
        }
        FakeMpi { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    /// Starts `driver N`, paused until its go file exists.
    fn spawn(&self, driver: &str, n: u64, tag: &str) -> (std::process::Child, PathBuf) {
        let go = self.dir.join(format!("go-{driver}-{n}-{tag}"));
        let _ = std::fs::remove_file(&go);
        let child = Command::new(self.path(driver))
            .arg(&go)
            .arg(n.to_string())
            .arg(self.dir.join(format!("out-{driver}-{n}-{tag}")))
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        (child, go)
    }

    /// Runs `sql` (`{lib}` / `{driver}` replaced) around `driver N`, scoped to the driver.
    fn run(&self, driver: &str, n: u64, sql: &str) -> (Vec<Output>, QueryStats) {
        self.run_beside(driver, n, sql, None)
    }

    /// [`FakeMpi::run`], releasing `other` (a paused driver outside the scope)
    /// after attaching and waiting for it to finish before detaching.
    fn run_beside(
        &self,
        driver: &str,
        n: u64,
        sql: &str,
        other: Option<(std::process::Child, PathBuf)>,
    ) -> (Vec<Output>, QueryStats) {
        let (mut child, go) = self.spawn(driver, n, "main");
        let sql = sql.replace("{lib}", &self.path("libfakempiio.so")).replace("{driver}", &self.path(driver));
        let engine = common::engine();
        let started = engine.prepare(&sql).and_then(|p| RunningQuery::start(&p, Scope::Process(child.id())));
        let mut q = started.unwrap_or_else(|e| {
            let _ = child.kill(); // paused drivers must not outlive a failed test
            let _ = child.wait();
            panic!("{}", e.render(&sql))
        });
        let mut others = vec![];
        if let Some((c, go)) = other {
            std::fs::write(&go, b"go").unwrap();
            others.push(c);
        }
        std::fs::write(&go, b"go").unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut outs = vec![];
        while child.try_wait().unwrap().is_none() || others.iter_mut().any(|c| c.try_wait().unwrap().is_none()) {
            assert!(Instant::now() < deadline, "driver did not finish");
            outs.extend(q.poll(Duration::from_millis(20)).unwrap());
        }
        assert!(child.wait().unwrap().success());
        for mut c in others {
            assert!(c.wait().unwrap().success());
        }
        outs.extend(q.finish().unwrap());
        (outs, q.stats().unwrap())
    }
}

impl Drop for FakeMpi {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Calls, sum of counts and sum of offsets of `driver N`'s MPI_File_write_at
/// calls: N that write, then one of 0 bytes at offset 0 that fails.
fn expected(n: u64) -> (u64, u64, u64) {
    (n + 1, (0..n).map(|i| (i % 7 + 1) * 100).sum(), (0..n).map(|i| i * 4096).sum())
}

#[test]
fn mpi_file_write_at_in_a_shared_library() {
    let mpi = FakeMpi::build();
    let n = 250;
    let (calls, bytes, offsets) = expected(n);
    for driver in ["driver-pie", "driver-nopie"] {
        let (outs, stats) = mpi.run(
            driver,
            n,
            "SELECT COUNT(*), SUM(arg3), SUM(arg1), MAX(arg3), MIN(arg3) FROM uprobe:{lib}:MPI_File_write_at",
        );
        let row = single(&outs);
        // Accounting (one event, aggregate): calls + dropped + missed = the driver's.
        counted_then_exact(u(&row, "COUNT(*)"), calls, &stats, driver, || {
            assert_eq!(u(&row, "SUM(arg3)"), bytes, "{driver}");
            assert_eq!(u(&row, "SUM(arg1)"), offsets, "{driver}");
            assert_eq!((u(&row, "MIN(arg3)"), u(&row, "MAX(arg3)")), (0, 700), "{driver}");
        });
    }
    // Returns: MPI_SUCCESS for each write, -1 for the failing call (the int's register
    // holds 0xffffffff: `retval_signed` is the full 64-bit register as i64).
    let (outs, stats) = mpi.run(
        "driver-pie",
        n,
        "SELECT retval & 4294967295 AS ret32, COUNT(*) FROM uretprobe:{lib}:MPI_File_write_at GROUP BY ret32",
    );
    let got: BTreeMap<u64, u64> = rows_of(&outs).iter().map(|r| (u(r, "ret32"), u(r, "COUNT(*)"))).collect();
    // Accounting (one event, aggregate): returns per code + dropped + missed = the driver's.
    assert_map_exact_or_accounted(&got, &[(0, calls - 1), (0xffff_ffff, 1)].into(), &stats, "returns per code");
    // libc's pwrite64 under it returns ssize_t: -1 for the bad descriptor.
    for (filter, want) in [("retval_signed < 0", (1, -1)), ("retval_signed >= 0", (calls - 1, bytes as i64))] {
        let sql = format!("SELECT COUNT(*), SUM(retval_signed) FROM uretprobe:libc:pwrite64 WHERE {filter}");
        let (outs, stats) = mpi.run("driver-pie", n, &sql);
        let row = single(&outs);
        counted_then_exact(u(&row, "COUNT(*)"), want.0, &stats, &sql, || {
            assert_eq!(i(&row, "SUM(retval_signed)"), want.1, "{sql}");
        });
    }
    // Grouped by the size argument: each of the 7 sizes as often as the driver used it.
    let (outs, stats) = mpi.run(
        "driver-pie",
        n,
        "SELECT arg3, COUNT(*) FROM uprobe:{lib}:MPI_File_write_at GROUP BY arg3 ORDER BY arg3",
    );
    let got: Vec<(u64, u64)> = rows_of(&outs).iter().map(|r| (u(r, "arg3"), u(r, "COUNT(*)"))).collect();
    let want: Vec<(u64, u64)> =
        (0..=7).map(|k| (k * 100, (0..n).filter(|i| i % 7 + 1 == k).count() as u64 + (k == 0) as u64)).collect();
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "ORDER BY arg3: {got:?}");
    // Accounting (one event, aggregate): calls per size + dropped + missed = the driver's.
    let map = |v: &[(u64, u64)]| v.iter().copied().collect::<BTreeMap<u64, u64>>();
    assert_map_exact_or_accounted(&map(&got), &map(&want), &stats, "calls per size");
}

#[test]
fn static_function_of_pie_and_non_pie_executables() {
    let mpi = FakeMpi::build();
    let n = 99;
    let (_, bytes, _) = expected(n);
    for driver in ["driver-pie", "driver-nopie"] {
        // block_sum is a static function: only .symtab knows it.
        let (outs, stats) = mpi.run(driver, n, "SELECT COUNT(*), SUM(arg1) FROM uprobe:{driver}:block_sum");
        let row = single(&outs);
        // Accounting (one event, aggregate): calls + dropped + missed = the driver's; sums exact
        // when nothing was lost.
        counted_then_exact(u(&row, "COUNT(*)"), n, &stats, driver, || {
            assert_eq!(u(&row, "SUM(arg1)"), bytes, "{driver}");
        });
        let (outs, stats) =
            mpi.run(driver, n, "SELECT COUNT(*), SUM(retval), MIN(retval_signed) FROM uretprobe:{driver}:block_sum");
        let row = single(&outs);
        counted_then_exact(u(&row, "COUNT(*)"), n, &stats, driver, || {
            assert_eq!(u(&row, "SUM(retval)"), bytes / 100, "{driver}");
            assert_eq!(i(&row, "MIN(retval_signed)"), 1);
        });
    }
}

#[test]
fn uprobe_pid_scope_attaches_to_that_process_only() {
    // Two drivers call the library while the query is attached to the second only:
    // the uprobe itself is limited to that process (the program runs 31 times,
    // not 72), on top of the program's own pid check.
    let _stats = ebq::runtime::enable_bpf_stats().expect("BPF run-time statistics");
    let mpi = FakeMpi::build();
    let other = mpi.spawn("driver-pie", 40, "other");
    let (outs, stats) =
        mpi.run_beside("driver-nopie", 30, "SELECT COUNT(*) FROM uprobe:{lib}:MPI_File_write_at", Some(other));
    // Accounting (-p, one event): calls, seen and the program's runs + dropped + missed = 31;
    // never more: the other driver's 41 calls must not even run the program.
    assert_exact_or_accounted(u(&single(&outs), "COUNT(*)"), 31, &stats, "calls");
    assert_exact_or_accounted(stats.seen, 31, &stats, "seen");
    assert_exact_or_accounted(stats.bpf_run_cnt, 31, &stats, "program runs (not the other driver's)");
}

#[test]
fn mpi_file_write_at_entry_to_return_latency_by_join() {
    let mpi = FakeMpi::build();
    let n = 250;
    let (calls, bytes, _) = expected(n);
    // Entry arguments carried to the return: bytes asked for per call, the return code, the latency.
    let (outs, stats) = mpi.run(
        "driver-pie",
        n,
        "SELECT COUNT(*) AS calls, SUM(e.arg3) AS bytes, SUM(x.retval & 4294967295) AS failures_x_ffffffff, \
         MIN(x.time - e.time) AS fastest, P50(x.time - e.time) AS p50, HIST(x.time - e.time) AS ns \
         FROM uprobe:{lib}:MPI_File_write_at e JOIN uretprobe:{lib}:MPI_File_write_at x ON e.tid = x.tid",
    );
    let row = single(&outs);
    // Accounting (JOIN): pairs + dropped + missed ends/starts + open + superseded = the
    // driver's calls; bytes and the failed call exact when nothing was lost.
    counted_then_exact(u(&row, "calls"), calls, &stats, &format!("one pair per call: {row:?}"), || {
        assert_eq!(u(&row, "bytes"), bytes);
        assert_eq!(u(&row, "failures_x_ffffffff"), 0xffff_ffff, "one call failed with -1");
    });
    assert!(u(&row, "fastest") > 0 && u(&row, "p50") >= u(&row, "fastest"), "{row:?}");
    assert_exact_or_accounted(stats.seen, calls, &stats, "seen");
    assert_eq!(stats.pending_full, 0, "{stats:?}");
}
