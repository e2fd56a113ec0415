//! Issue 17: PostgreSQL's own USDT probes against PostgreSQL's own counters.
//!
//! A throwaway PostgreSQL 15 cluster (Debian `postgresql-15`, run as the
//! `postgres` user, unix socket only) gets a table far larger than its
//! `shared_buffers=128kB` (16 buffers), is restarted (an empty buffer pool),
//! and seq-scans it once. Every block the scan does not find in the pool is
//! read through the storage manager (`smgr__md__read__start/done`; from the OS
//! page cache or the disk, it is a read for PostgreSQL either way) and counted
//! by PostgreSQL in `pg_statio_user_tables.heap_blks_read`. Two `ebq run`s,
//! system-wide, trace the scan side by side: an ad-hoc JOIN filtered on the
//! table's filenode and the shipped `pg-relation-reads`; both must count
//! exactly the `heap_blks_read` delta, and bytes = reads × 8192.
//!
//! Everything that can block is bounded: each child's output is read on a
//! thread and waited for with a deadline (killed past it), `pg_ctl` writes to
//! a log file with its standard streams on /dev/null (a postmaster inheriting
//! a pipe would keep a reader waiting forever), and ebq gets SIGINT only after
//! its "ebq: tracing" line says the probes are attached.

use crate::common;

use common::ebq_bin;
use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// Rows of ~500 bytes: about 15 a page, so ~1,300 blocks (~10 MiB).
const ROWS: u64 = 20_000;

/// Runs `cmd` to completion with `secs` as a deadline (killed past it); its stdout.
fn run_bounded(mut cmd: Command, secs: u64) -> String {
    let what = format!("{cmd:?}");
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => {
            let out = out.unwrap();
            assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap()
        }
        Err(_) => {
            // SAFETY: kill on a child we spawned; the thread reaps it.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            panic!("{what} did not finish within {secs} s");
        }
    }
}

/// `runuser -u postgres -- PROGRAM ARGS…`.
fn as_postgres(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new("runuser");
    cmd.args(["-u", "postgres", "--", &format!("{PG_BIN}/{program}")]).args(args);
    cmd
}

/// A temporary cluster; stopped (`-m immediate`) and removed when dropped.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn sock(&self) -> String {
        self.dir.display().to_string()
    }

    fn init() -> Cluster {
        assert!(
            std::path::Path::new(PG_BIN).join("initdb").exists(),
            "{PG_BIN}/initdb is missing: scripts/setup.sh installs postgresql-15"
        );
        let dir = std::env::temp_dir().join(format!("ebq-pg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster { dir };
        run_bounded(
            {
                let mut c = Command::new("chown");
                c.args(["postgres:postgres", &cluster.sock()]);
                c
            },
            10,
        );
        run_bounded(as_postgres("initdb", &["-D", &cluster.data(), "-A", "trust", "-U", "postgres", "--no-sync"]), 120);
        cluster
    }

    fn pg_ctl(&self, action: &str) {
        let log = self.dir.join("log").display().to_string();
        let opts = format!("-c shared_buffers=128kB -c listen_addresses='' -k {}", self.sock());
        let mut cmd = as_postgres("pg_ctl", &["-D", &self.data(), "-l", &log, "-w", "-o", &opts, action]);
        cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let status = cmd.status().unwrap();
        let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
        assert!(status.success(), "pg_ctl {action}: {status}\n{log}");
    }

    /// One `psql` session running `sql`: its unaligned, tuples-only output.
    fn psql(&self, sql: &str) -> String {
        let args = ["-h", &self.sock(), "-d", "postgres", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql];
        run_bounded(as_postgres("psql", &args), 120).trim().to_string()
    }

    fn heap_blks_read(&self) -> u64 {
        self.psql("select heap_blks_read from pg_statio_user_tables where relname = 't'").parse().unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let mut cmd = as_postgres("pg_ctl", &["-D", &self.data(), "-m", "immediate", "stop"]);
        let _ = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A background `ebq run`: its stdout and stderr read on threads; SIGKILLed
/// and reaped when dropped before `stop`.
struct Ebq {
    child: Child,
    stdout: Receiver<Vec<u8>>,
    stderr: Receiver<String>,
}

impl Ebq {
    /// Starts `ebq ARGS… --format json` and waits (bounded) for its "ebq: tracing" line.
    fn start(args: &[&str]) -> Ebq {
        let arg = args.join(" ");
        let mut child = Command::new(ebq_bin())
            .args(args)
            .args(["--format", "json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (otx, stdout) = channel();
        let mut out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![];
            let _ = out.read_to_end(&mut buf);
            let _ = otx.send(buf);
        });
        let (etx, stderr) = channel();
        let err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                let _ = etx.send(line);
            }
        });
        let ebq = Ebq { child, stdout, stderr };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match ebq.stderr.recv_timeout(left) {
                Ok(l) if l.starts_with("ebq: tracing") => return ebq,
                Ok(l) if l.starts_with("error") => panic!("ebq {arg}: {l}"),
                Ok(_) => {}
                Err(_) => panic!("ebq {arg}: no \"ebq: tracing\" line within 120 s"),
            }
        }
    }

    /// SIGINT; the JSON rows and the last stderr line (the event accounting).
    fn stop(mut self) -> (Vec<Json>, String) {
        // SAFETY: kill on a child we spawned and have not reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let stdout = self.stdout.recv_timeout(Duration::from_secs(60)).expect("ebq's output within 60 s of SIGINT");
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "ebq did not exit within 30 s of closing its output");
            std::thread::sleep(Duration::from_millis(50));
        };
        let lines: Vec<String> = std::iter::from_fn(|| self.stderr.recv_timeout(Duration::from_secs(5)).ok()).collect();
        assert!(status.success(), "ebq: {status}\n{}", lines.join("\n"));
        let stats = lines.iter().rfind(|l| l.contains("events seen")).cloned().unwrap_or_default();
        let rows = String::from_utf8_lossy(&stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect();
        (rows, stats)
    }
}

impl Drop for Ebq {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn num(row: &Json, col: &str) -> u64 {
    row[col].as_u64().unwrap_or_else(|| panic!("column {col} in {row}"))
}

/// The accounting line says nothing was lost: no events dropped or missed
/// (a missed start would make a count short), no pair superseded, lost or evicted.
fn assert_nothing_lost(stats: &str) {
    for part in [" 0 dropped", " 0 missed;", " 0 start events missed", " 0 superseded", " 0 pairs lost", " 0 evicted"] {
        assert!(stats.contains(part), "expected `{part}` in: {stats}");
    }
}

#[test]
fn smgr_reads_equal_heap_blks_read() {
    let pg = Cluster::init();
    pg.pg_ctl("start");
    pg.psql(&format!(
        "create table t (id int, pad text); \
         insert into t select g, repeat('x', 500) from generate_series(1, {ROWS}) g"
    ));
    // Hint bits set now, so the measured scan only reads.
    pg.psql("vacuum freeze t");
    pg.psql("checkpoint");
    let blocks: u64 = pg.psql("select pg_relation_size('t') / 8192").parse().unwrap();
    assert!(blocks > 1000, "{blocks} blocks: the table must dwarf 16 buffers");
    let filenode: u64 = pg.psql("select pg_relation_filenode('t')").parse().unwrap();
    let db: u64 = pg.psql("select oid from pg_database where datname = current_database()").parse().unwrap();
    // An empty buffer pool.
    pg.pg_ctl("restart");
    let before = pg.heap_blks_read();

    let postgres = format!("{PG_BIN}/postgres");
    let adhoc = format!(
        "SELECT s.arg4 AS relation, COUNT(*) AS reads, SUM(d.arg6) AS bytes \
         FROM usdt:{postgres}:smgr__md__read__start s JOIN usdt:{postgres}:smgr__md__read__done d ON s.tid = d.tid \
         WHERE s.arg4 = {filenode} AND s.arg3 = {db} GROUP BY s.arg4"
    );
    let ebq_adhoc = Ebq::start(&[&adhoc]);
    let ebq_shipped = Ebq::start(&["run", "pg-relation-reads"]);

    // The session's exit flushes its statistics (and pg_stat_force_next_flush
    // makes the transaction's end do so too).
    let count = pg.psql("select pg_stat_force_next_flush(); select count(*) from t");
    assert_eq!(count.lines().last(), Some(ROWS.to_string().as_str()), "{count}");
    let mut after = pg.heap_blks_read();
    for _ in 0..50 {
        if after != before {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        after = pg.heap_blks_read();
    }
    let delta = after - before;
    assert!(delta > 1000, "heap_blks_read {before} -> {after}: the scan read only {delta} blocks from disk");

    let (rows, stats) = ebq_adhoc.stop();
    assert_nothing_lost(&stats);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(num(&rows[0], "relation"), filenode);
    assert_eq!(num(&rows[0], "reads"), delta, "ad-hoc: reads vs heap_blks_read {before} -> {after}");
    assert_eq!(num(&rows[0], "bytes"), delta * 8192);

    let (rows, stats) = ebq_shipped.stop();
    assert_nothing_lost(&stats);
    // JSON prints a HIST row once per non-empty bucket (`lo`, `hi`, `count`),
    // the other columns repeated.
    let ours: Vec<&Json> = rows.iter().filter(|r| num(r, "relation") == filenode && num(r, "database") == db).collect();
    assert!(!ours.is_empty(), "no row for relation {filenode} among {} rows", rows.len());
    for row in &ours {
        assert_eq!(num(row, "tablespace"), 1663, "pg_default: {row}");
        assert_eq!(num(row, "reads"), delta, "pg-relation-reads: reads vs heap_blks_read {before} -> {after}: {row}");
        assert_eq!(num(row, "bytes"), delta * 8192, "{row}");
    }
    let in_buckets: u64 = ours.iter().map(|r| num(r, "count")).sum();
    assert_eq!(in_buckets, delta, "the latency histogram holds every read");
    let top = ours.iter().map(|r| num(r, "hi")).max().unwrap();
    let p99 = num(ours[0], "p99_us");
    // The sketch is exact below 92 and within 1.09 % above.
    assert!(p99 <= top + top / 50, "p99 {p99} µs above the histogram's top bucket ({top} µs)");
    let row = ours[0];
    eprintln!("heap_blks_read {before} -> {after} (delta {delta}); pg-relation-reads row: {row}");
}
