//! `EBQ_TRACE_STARTUP=1`: where a one-shot query's time goes.
//!
//! Each [`mark`] prints, on stderr, the milliseconds since the first mark
//! (ebq's `main`) and since the previous one, the CPU every thread of the
//! process has used since the first mark (a sink's or librdkafka's threads
//! too), and what just finished:
//!
//! ```text
//! ebq: startup    12.3 ms  (+  4.1)  cpu    10.9 ms  object read from the cache
//! ```
//!
//! Off (one relaxed load per mark) unless the variable is set, so the marks
//! stay in the code the figures in `docs/src/internals/startup.md` come from.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

/// The variable that turns the marks on.
pub const ENV: &str = "EBQ_TRACE_STARTUP";

/// (first mark, previous mark, process CPU ns at the first mark), once on.
static MARKS: Mutex<Option<(Instant, Instant, u64)>> = Mutex::new(None);

fn enabled() -> bool {
    static ON: OnceLock<AtomicBool> = OnceLock::new();
    ON.get_or_init(|| AtomicBool::new(std::env::var_os(ENV).is_some_and(|v| v != "0" && !v.is_empty())))
        .load(Ordering::Relaxed)
}

/// Records that `phase` just finished (see the module doc).
pub fn mark(phase: &str) {
    if !enabled() {
        return;
    }
    let now = Instant::now();
    let cpu = super::selfstats::process_cpu_ns();
    let Ok(mut marks) = MARKS.lock() else { return };
    let (first, previous, cpu_first) = marks.get_or_insert((now, now, cpu));
    let (total, delta) = (now - *first, now - *previous);
    *previous = now;
    eprintln!(
        "ebq: startup {:8.1} ms  (+{:6.1})  cpu {:7.1} ms  {phase}",
        total.as_secs_f64() * 1e3,
        delta.as_secs_f64() * 1e3,
        cpu.saturating_sub(*cpu_first) as f64 / 1e6
    );
}
