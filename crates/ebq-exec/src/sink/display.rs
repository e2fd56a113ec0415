//! How the terminal shows cells people read: times and stacks.
//!
//! Files and machine formats keep raw values (ns since boot, stacks as one
//! `"; "`-separated string); the terminal table shows event times in seconds
//! since the query started (or as UTC wall-clock time) and stacks one frame per
//! line. Columns are recognised by their output name: `time`, `e.time`, …
//! (the `time` system column as selected) and `kstack`/`ustack`.

use crate::clock::clock_ns;
use crate::Value;

/// How the terminal shows `time` columns (`--time`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeDisplay {
    /// Seconds since the query started, to the microsecond (`1.234567`).
    Relative {
        /// CLOCK_MONOTONIC ns at the start.
        origin_ns: u64,
    },
    /// UTC wall-clock time, ISO 8601 to the microsecond (`2026-11-24T02:45:01.123456Z`).
    Wall {
        /// CLOCK_REALTIME − CLOCK_MONOTONIC in ns, measured once at the start.
        offset_ns: i128,
    },
    /// The raw value: ns since boot (CLOCK_MONOTONIC).
    Raw,
}

impl TimeDisplay {
    /// Relative to now (the query is about to start).
    pub fn relative_from_now() -> TimeDisplay {
        TimeDisplay::Relative { origin_ns: clock_ns(libc::CLOCK_MONOTONIC) as u64 }
    }

    /// Wall-clock time, with the process's one clock offset ([`super::wall_clock`]),
    /// so the terminal and the files place an event at the same instant.
    pub fn wall_from_now() -> TimeDisplay {
        TimeDisplay::Wall { offset_ns: i128::from(super::wall_clock().offset_ns) }
    }

    /// A monotonic ns timestamp as text.
    pub fn show(&self, ns: u64) -> String {
        let mut s = String::new();
        self.push(&mut s, ns);
        s
    }

    /// [`show`](Self::show) appended to `out`.
    pub fn push(&self, out: &mut String, ns: u64) {
        use std::fmt::Write;
        match *self {
            TimeDisplay::Relative { origin_ns } => {
                let d = i128::from(ns) - i128::from(origin_ns);
                let sign = if d < 0 { "-" } else { "" };
                let d = d.unsigned_abs();
                let _ = write!(out, "{sign}{}.{:06}", d / 1_000_000_000, d % 1_000_000_000 / 1000);
            }
            TimeDisplay::Wall { offset_ns } => out.push_str(&iso_utc(i128::from(ns) + offset_ns)),
            TimeDisplay::Raw => {
                let _ = write!(out, "{ns}");
            }
        }
    }
}

/// ns since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.uuuuuuZ`: the files'
/// [`super::iso8601`] (nine digits) cut to the microsecond, so the terminal
/// and the files agree on the calendar.
pub fn iso_utc(ns: i128) -> String {
    let ns = i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX });
    let mut s = super::iso8601(ns);
    // `…SS.nnnnnnnnnZ` → `…SS.uuuuuuZ`: the last three digits go, floor as before.
    s.truncate(s.len() - 4);
    s.push('Z');
    s
}

/// True for an output column holding event times.
fn is_time(name: &str) -> bool {
    name == "time" || name.ends_with(".time")
}

/// True for an output column holding a call stack.
fn is_stack(name: &str) -> bool {
    let base = name.rsplit('.').next().unwrap_or(name);
    base == "kstack" || base == "ustack"
}

/// The terminal text of the cell `v` of column `name`; may span several lines
/// (a stack: one frame per line).
pub fn terminal_text(name: &str, v: &Value, time: &TimeDisplay) -> String {
    let mut s = String::new();
    push_terminal_text(&mut s, name, v, time);
    s
}

/// [`terminal_text`] appended to `out` (the table writes a batch's cells into one string).
pub(crate) fn push_terminal_text(out: &mut String, name: &str, v: &Value, time: &TimeDisplay) {
    use std::fmt::Write;
    match v {
        Value::U(ns) if is_time(name) => time.push(out, *ns),
        Value::U(u) => {
            let _ = write!(out, "{u}");
        }
        Value::I(i) => {
            let _ = write!(out, "{i}");
        }
        Value::S(s) if is_stack(name) => {
            for (i, frame) in s.split("; ").enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(frame);
            }
        }
        Value::S(s) => out.push_str(s),
        v => out.push_str(&super::text(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_show_as_asked() {
        let rel = TimeDisplay::Relative { origin_ns: 5_000_000_000 };
        assert_eq!(rel.show(6_234_567_891), "1.234567");
        assert_eq!(rel.show(4_500_000_000), "-0.500000");
        assert_eq!(TimeDisplay::Raw.show(6_234_567_891), "6234567891");
        // 2026-11-24T02:45:01.123456Z is 1795488301.123456 s after the epoch.
        let wall = TimeDisplay::Wall { offset_ns: 1_795_488_301_000_000_000 - 1_000_000_000 };
        assert_eq!(wall.show(1_123_456_789), "2026-11-24T02:45:01.123456Z");
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(iso_utc(951_782_400_000_000_000), "2000-02-29T00:00:00.000000Z");
    }

    #[test]
    fn stacks_take_one_line_per_frame_and_other_columns_stay() {
        let t = TimeDisplay::Raw;
        assert_eq!(terminal_text("kstack", &Value::S("a+0x1; b+0x2".into()), &t), "a+0x1\nb+0x2");
        assert_eq!(terminal_text("e.ustack", &Value::S("a; b".into()), &t), "a\nb");
        assert_eq!(terminal_text("comm", &Value::S("a; b".into()), &t), "a; b");
        assert_eq!(terminal_text("x.time", &Value::U(7), &t), "7");
    }
}
