//! Issue 17: USDT probes, counted and decoded exactly.
//!
//! `tests/c/sdt/sdt_fire.c` (built here with `<sys/sdt.h>`, systemtap-sdt-dev)
//! fires `ebqtest:plain(i, name, -(i + 1), -7)` unguarded at -O2 (register and
//! constant operands) and `ebqtest:guarded(-(i + 1) * 1000000007, (short)-i,
//! name)` behind its semaphore at -O0 (memory operands), N times each, and
//! reports its own tally: how many times it saw the semaphore set. Nobody but
//! the attached uprobe sets that semaphore, so a guarded count equal to N
//! proves ebq set it, and 0 after the query proves it was released.

use crate::common;

use common::{assert_exact_or_accounted, assert_keyed_exact_or_accounted, lost, rows_of, s, u, Row};
use ebq::runtime::Value;
use ebq::{Output, QueryStats, RunningQuery, Scope};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A signed integer cell.
fn i(row: &Row, col: &str) -> i64 {
    match row.get(col) {
        Some(Value::I(v)) => *v,
        other => panic!("column {col}: expected a signed integer, got {other:?}"),
    }
}

/// `sdt_fire`, built in a private directory.
struct SdtFire {
    dir: PathBuf,
}

impl SdtFire {
    fn build() -> SdtFire {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/sdt");
        // One directory per build: two tests building at once (`--test-threads` > 1)
        // must not overwrite each other's binary while a uprobe is on it.
        static BUILDS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ebq-sdt-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cc = |args: &[&str]| {
            let out = Command::new("cc").args(args).current_dir(&dir).output().expect("cc must be installed");
            assert!(
                out.status.success(),
                "cc {args:?}: {} (is systemtap-sdt-dev installed? scripts/setup.sh installs it)",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        cc(&["-O2", "-c", "-o", "fire.o", src.join("sdt_fire.c").to_str().unwrap()]);
        cc(&["-O0", "-c", "-o", "guarded.o", src.join("sdt_guarded.c").to_str().unwrap()]);
        cc(&["-o", "sdt_fire", "fire.o", "guarded.o"]);
        SdtFire { dir }
    }

    fn bin(&self) -> String {
        self.dir.join("sdt_fire").display().to_string()
    }

    /// Runs `sql` (`{bin}` replaced) scoped to `sdt_fire N` (paused until attached):
    /// the results, the stats and the program's own report.
    fn run(&self, sql: &str, n: u64) -> (Vec<Output>, QueryStats, serde_json::Value) {
        let go = self.dir.join(format!("go-{n}"));
        let _ = std::fs::remove_file(&go);
        let mut child = Command::new(self.bin()).arg(&go).arg(n.to_string()).stdout(Stdio::piped()).spawn().unwrap();
        let sql = sql.replace("{bin}", &self.bin());
        let engine = common::engine();
        let started = engine.prepare(&sql).and_then(|p| RunningQuery::start(&p, Scope::Process(child.id())));
        let mut q = started.unwrap_or_else(|e| {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{}", e.render(&sql))
        });
        std::fs::write(&go, b"go").unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut outs = vec![];
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "sdt_fire did not finish");
            outs.extend(q.poll(Duration::from_millis(20)).unwrap());
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        outs.extend(q.finish().unwrap());
        let report = serde_json::from_slice(&out.stdout).expect("sdt_fire's JSON report");
        (outs, q.stats().unwrap(), report)
    }

    /// `sdt_fire N` with nothing attached: its report.
    fn run_alone(&self, n: u64) -> serde_json::Value {
        let go = self.dir.join("go-alone");
        std::fs::write(&go, b"go").unwrap();
        let out = Command::new(self.bin()).arg(&go).arg(n.to_string()).output().unwrap();
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for SdtFire {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const NAMES: [&str; 3] = ["alpha", "beta", "gamma-delta"];

#[test]
fn unguarded_probe_rows_decode_integer_string_negative_and_constant_arguments() {
    let sdt = SdtFire::build();
    let n = 300;
    let (outs, stats, report) =
        sdt.run("SELECT pid, arg0, str(arg1) AS name, arg2, arg3 FROM usdt:{bin}:ebqtest:plain", n);
    let rows = rows_of(&outs);
    assert_eq!(report["plain"].as_u64(), Some(n));
    // Accounting (rows; a uprobe under the same per-CPU guard as tracepoint programs): rows +
    // dropped + missed = the program's n firings, seen + missed too; each row decodes as its
    // own iteration k (arg0); every k in order, and the names' bytes, when nothing was lost.
    assert_exact_or_accounted(rows.len() as u64, n, &stats, "rows");
    assert_exact_or_accounted(stats.seen, n, &stats, "seen");
    assert_eq!(stats.delivered, rows.len() as u64, "{stats:?}");
    for (j, r) in rows.iter().enumerate() {
        let k = i(r, "arg0");
        assert!((0..n as i64).contains(&k), "{r:?}");
        if lost(&stats) == 0 {
            assert_eq!(k, j as i64, "{r:?}");
        }
        assert_eq!(s(r, "name"), NAMES[k as usize % 3], "{r:?}");
        assert_eq!(i(r, "arg2"), -(k + 1), "{r:?}");
        assert_eq!(i(r, "arg3"), -7, "{r:?}");
    }
    // The names' lengths add up to the program's own measure of them.
    let name_bytes: u64 = rows.iter().map(|r| s(r, "name").len() as u64).sum();
    if lost(&stats) == 0 {
        assert_eq!(Some(name_bytes), report["name_bytes"].as_u64());
    }
    // Nothing attached to the guarded probe: its semaphore stayed 0.
    assert_eq!(report["guarded"].as_u64(), Some(0));
}

#[test]
fn guarded_probe_fires_while_attached_and_its_memory_operands_decode() {
    let sdt = SdtFire::build();
    let n = 250;
    let sql = "SELECT COUNT(*) AS n, SUM(arg0) AS big, MIN(arg1) AS small, COUNT(DISTINCT str(arg2)) AS names \
               FROM usdt:{bin}:guarded";
    let (outs, stats, report) = sdt.run(sql, n);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    // The program saw its semaphore set on every iteration: ebq set it.
    assert_eq!(report["guarded"].as_u64(), Some(n));
    // Accounting (one event, aggregate): n + dropped + missed = the program's firings; the
    // sums and extremes exact when nothing was lost.
    assert_exact_or_accounted(u(&rows[0], "n"), n, &stats, "firings");
    assert_exact_or_accounted(stats.seen, n, &stats, "seen");
    let n = n as i64;
    if lost(&stats) == 0 {
        assert_eq!(i(&rows[0], "big"), -(n * (n + 1) / 2) * 1_000_000_007);
        assert_eq!(i(&rows[0], "small"), -(n - 1));
        assert_eq!(u(&rows[0], "names"), 3);
    }
    // Detached: the semaphore is back to 0 for the next run.
    assert_eq!(sdt.run_alone(10)["guarded"].as_u64(), Some(0));
}

#[test]
fn grouped_by_string_argument_and_listed_by_events() {
    let sdt = SdtFire::build();
    let n = 100;
    let (outs, stats, _) =
        sdt.run("SELECT str(arg1) AS name, COUNT(*) AS n, SUM(arg0) AS s FROM usdt:{bin}:plain GROUP BY str(arg1)", n);
    let got: BTreeMap<String, (u64, i64)> =
        rows_of(&outs).iter().map(|r| (s(r, "name"), (u(r, "n"), i(r, "s")))).collect();
    let want: BTreeMap<String, (u64, i64)> = (0..3)
        .map(|k| {
            let is: Vec<i64> = (0..n as i64).filter(|i| i % 3 == k).collect();
            (NAMES[k as usize].to_string(), (is.len() as u64, is.iter().sum()))
        })
        .collect();
    // Accounting (one event, aggregate): firings per name + dropped + missed = the program's;
    // (firings, sum) exact when nothing was lost.
    assert_keyed_exact_or_accounted(&got, &want, |v| v.0, &stats, "firings per name");

    let out = Command::new(common::ebq_bin()).args(["events", &format!("usdt:{}:*", sdt.bin())]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines, [format!("usdt:{}:ebqtest:guarded", sdt.bin()), format!("usdt:{}:ebqtest:plain", sdt.bin())]);
}
