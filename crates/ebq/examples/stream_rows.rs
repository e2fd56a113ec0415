//! The library API for row queries: stream one Arrow row per event until a
//! command ends, then print the accounting and what decoding cost ebq.
//! Run as root:
//!
//! ```sh
//! cargo run --release -p ebq --example stream_rows -- \
//!     "SELECT time, pid, comm, fd, count FROM syscalls.sys_enter_read WHERE comm = 'dd'" \
//!     dd if=/dev/zero of=/dev/null bs=1 count=1000000
//! ```
//!
//! The command is started before the query attaches and waits on its stdin, so
//! every one of its events is seen; ebq's own CPU time (not the command's)
//! per delivered row is what the decode path costs.

use ebq::{Engine, RunningQuery, Scope};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [sql, command @ ..] = args.as_slice() else {
        return Err("usage: stream_rows SQL COMMAND [ARGS…]".into());
    };
    if command.is_empty() {
        return Err("usage: stream_rows SQL COMMAND [ARGS…]".into());
    }
    let engine = Engine::new()?;
    let prepared = engine.prepare(sql).map_err(|e| e.render(sql))?;
    // The command waits (in `sh`, which then execs it: same pid) until the query is attached.
    let mut child = Command::new("sh")
        .args(["-c", "read _ && exec \"$@\"", "sh"])
        .args(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()?;
    let mut query = RunningQuery::start(&prepared, Scope::Tracked(vec![child.id()])).map_err(|e| e.render(sql))?;
    child.stdin.take().expect("piped").write_all(b"go\n")?;
    let t0 = Instant::now();
    let mut rows = 0usize;
    while child.try_wait()?.is_none() {
        for out in query.poll(Duration::from_millis(50))? {
            rows += out.batch.num_rows(); // out.batch is an Arrow RecordBatch
        }
    }
    for out in query.finish()? {
        rows += out.batch.num_rows();
    }
    let secs = t0.elapsed().as_secs_f64();
    let s = query.stats()?;
    println!(
        "{rows} rows in {secs:.3} s ({:.0} rows/s); seen {} matched {} delivered {} dropped {} missed {}; \
         ebq CPU {:.1} ms = {:.0} ns per row",
        rows as f64 / secs,
        s.seen,
        s.matched,
        s.delivered,
        s.dropped,
        s.missed,
        s.user_cpu_ns as f64 / 1e6,
        s.user_cpu_ns as f64 / rows.max(1) as f64
    );
    Ok(())
}
