//! The library API: start a windowed query, print each window as it closes,
//! then the query's accounting. Run as root:
//!
//! ```sh
//! cargo run --release -p ebq --example syscalls_by_process -- 3
//! ```

use ebq::sink::{Sink, TableSink};
use ebq::{Engine, RunningQuery, Scope};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let seconds: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    let sql = "SELECT comm, COUNT(*) AS syscalls FROM raw_syscalls.sys_enter \
               GROUP BY comm ORDER BY syscalls DESC LIMIT 5 WINDOW(time, 1000, 1000)";
    let engine = Engine::new()?;
    let prepared = engine.prepare(sql).map_err(|e| e.render(sql))?;
    // BPF run-time statistics cost two clock reads per event; ask for them explicitly.
    let _stats_on = ebq::runtime::enable_bpf_stats()?;
    let mut query = RunningQuery::start(&prepared, Scope::All).map_err(|e| e.render(sql))?;
    println!("schema: {:?}", query.schema().fields().iter().map(|f| f.name()).collect::<Vec<_>>());
    let mut sink = TableSink::new(std::io::stdout());
    query.set_deadline(query.started_at() + Duration::from_secs(seconds));
    let stop = Instant::now() + Duration::from_secs(seconds + 5);
    while !query.is_finished() && Instant::now() < stop {
        for out in query.poll(Duration::from_millis(100))? {
            sink.write(&out)?; // out.batch is an arrow RecordBatch
        }
    }
    for out in query.finish()? {
        sink.write(&out)?;
    }
    let s = query.stats()?;
    println!(
        "seen {} matched {} dropped {} missed {}; BPF: {} runs, {:.0} ns/run; ebq CPU {:.1} ms",
        s.seen,
        s.matched,
        s.dropped,
        s.missed,
        s.bpf_run_cnt,
        s.bpf_run_time_ns as f64 / s.bpf_run_cnt.max(1) as f64,
        s.user_cpu_ns as f64 / 1e6
    );
    Ok(())
}
