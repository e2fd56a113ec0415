//! Wall-clock time for the files ebq writes.
//!
//! ebq's timestamps (`time`, `window_start_ns`, `window_end_ns`) are
//! CLOCK_MONOTONIC nanoseconds: what `bpf_ktime_get_ns` returns in the kernel
//! and what user space cuts windows with, so they compare with each other
//! exactly. A reader of a file cannot place them in time, though: the
//! monotonic clock starts at boot. The file sinks therefore add each one again
//! as wall-clock time (`time_wall`, `window_start`, `window_end`), computed
//! with one offset CLOCK_REALTIME − CLOCK_MONOTONIC measured once per run
//! ([`wall_clock`]). One offset keeps the wall columns exactly as far apart
//! as the monotonic ones; an NTP step during the run is not followed.

use arrow_schema::{DataType, Schema, TimeUnit};
use chrono::{Datelike, Timelike};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// The monotonic row timestamp column that gets a wall-clock twin.
pub const TIME: &str = "time";
/// The wall-clock twin of [`TIME`], right after it.
pub const TIME_WALL: &str = "time_wall";

/// The Arrow type of the wall-clock columns: `timestamp[ns, tz=UTC]`.
pub fn wall_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC, and how well it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WallClock {
    /// Nanoseconds to add to a CLOCK_MONOTONIC time to get Unix time.
    pub offset_ns: i64,
    /// Half the gap between the two monotonic reads around the realtime
    /// read the offset came from: the offset is right to ± this.
    pub uncertainty_ns: u64,
}

/// The run's offset, measured on first use (the file sinks ask when they are
/// created, before the query starts) and the same for the rest of the run.
pub fn wall_clock() -> WallClock {
    static CLOCK: OnceLock<WallClock> = OnceLock::new();
    *CLOCK.get_or_init(WallClock::measure)
}

impl WallClock {
    /// Reads the realtime clock between two monotonic reads, a few times, and
    /// keeps the tightest bracket (a preemption between reads widens one).
    fn measure() -> WallClock {
        let realtime_ns = || SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64);
        (0..16)
            .map(|_| {
                let before = crate::monotonic_ns() as i64;
                let real = realtime_ns();
                let after = crate::monotonic_ns() as i64;
                WallClock { offset_ns: real - (before + after) / 2, uncertainty_ns: ((after - before) / 2) as u64 }
            })
            .min_by_key(|c| c.uncertainty_ns)
            .expect("sixteen tries")
    }

    /// The Unix time, in ns, of a CLOCK_MONOTONIC time.
    pub fn wall_ns(&self, monotonic_ns: u64) -> i64 {
        (monotonic_ns as i64).saturating_add(self.offset_ns)
    }

    /// The wall-clock time of a CLOCK_MONOTONIC time as ISO 8601 UTC with
    /// nanoseconds, as the line formats write it.
    pub fn iso(&self, monotonic_ns: u64) -> String {
        iso8601(self.wall_ns(monotonic_ns))
    }
}

/// Unix time in ns as `2026-11-24T02:05:00.123456789Z` (always nine digits,
/// so the strings sort as the times do).
///
/// Rows come in time order, so the text up to the seconds is kept per thread
/// and only the nanoseconds are formatted for the next row of the same second
/// (a full `format!` per row tripled ebq's user CPU writing CSV rows).
pub fn iso8601(unix_ns: i64) -> String {
    thread_local! {
        static SECOND: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let secs = unix_ns.div_euclid(1_000_000_000);
    let mut nanos = unix_ns.rem_euclid(1_000_000_000) as u32;
    SECOND.with_borrow_mut(|(cached, prefix)| {
        if *cached != secs {
            // Any i64 of ns is a second chrono can place (±292 years around 1970).
            let t = chrono::DateTime::from_timestamp(secs, 0).expect("an i64 of ns is within chrono's range");
            let (y, m, d) = (t.year(), t.month(), t.day());
            let (hh, mm, ss) = (t.hour(), t.minute(), t.second());
            *prefix = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.");
            *cached = secs;
        }
        let mut digits = [b'0'; 9];
        for d in digits.iter_mut().rev() {
            *d = b'0' + (nanos % 10) as u8;
            nanos /= 10;
        }
        let mut s = String::with_capacity(prefix.len() + 10);
        s.push_str(prefix);
        s.push_str(std::str::from_utf8(&digits).expect("ASCII digits"));
        s.push('Z');
        s
    })
}

/// The index of the monotonic `time` column of a query's output (named
/// `time` and UInt64, as the `time` system column is), if it has one.
pub fn time_column(schema: &Schema) -> Option<usize> {
    schema.fields().iter().position(|f| f.name() == TIME && f.data_type() == &DataType::UInt64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000000Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999999999Z");
        // date -u -d @1772245500 → Sat Feb 28 02:25:00 UTC 2026
        assert_eq!(iso8601(1_772_245_500_000_000_007), "2026-02-28T02:25:00.000000007Z");
        // 2024 is a leap year: day 60 of it is Feb 29.
        assert_eq!(iso8601(1_709_164_800 * 1_000_000_000), "2024-02-29T00:00:00.000000000Z");
        assert_eq!(iso8601(4_102_444_799 * 1_000_000_000 + 123), "2099-12-31T23:59:59.000000123Z");
    }

    #[test]
    fn the_offset_maps_now_to_now() {
        let c = wall_clock();
        assert_eq!(c, wall_clock(), "measured once");
        assert!(c.uncertainty_ns < 1_000_000, "{c:?}");
        let wall = c.wall_ns(crate::monotonic_ns());
        let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64;
        assert!((real - wall).abs() < 1_000_000_000, "{real} vs {wall}");
    }
}
