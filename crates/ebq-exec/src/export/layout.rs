//! One fixed bucket layout per histogram family.
//!
//! The kernel reports only the buckets that counted something, so two groups
//! (or two windows) of one `HIST` column would otherwise show different `le`
//! sets. Prometheus sums buckets by `le` (`sum by (le)`, `histogram_quantile`)
//! and OTLP receivers expect a histogram's explicit bounds not to change from
//! point to point, so every sample of a family gets every bucket of the
//! column's bucketing, from the first to the top, empty ones included:
//!
//! ```text
//! HIST(x), x unsigned   le = 0, 1, 3, 7, …, 2^63−1, +Inf      (65 buckets)
//! HIST(x), x signed     le = −1, 0, 1, 3, …, 2^62−1, +Inf     (65 buckets)
//! HIST(x) planned for exporters (Log2::Ceil), x unsigned
//!                       le = 0, 1, 2, 4, 8, …, 2^63, +Inf        (66 buckets)
//! LHIST(x, 0, 30, 10)   le = 9, 19, 29, +Inf                  (an empty underflow range is left out)
//! ```
//!
//! `le` is the inclusive upper bound `hi − 1` of ebq's `[lo, hi)` bucket in
//! the family's base unit; the bucket that reaches the type's end (2^64
//! unsigned, 2^63 signed) is +∞.

use super::naming::scaled;
use ebq_front::bind::AggFunc;
use ebq_front::hist::Bucket;

/// The bucket bounds of one histogram column.
#[derive(Debug, Clone, PartialEq)]
pub struct HistLayout {
    /// Inclusive upper bounds in the base unit, strictly ascending, ending with +∞.
    pub bounds: Vec<f64>,
    /// Factor from the argument's unit into the base unit.
    pub scale: f64,
    /// The argument type's end (2^64 or 2^63): the bucket reaching it is +∞.
    pub end: i128,
}

/// A bucket's `le`: `hi − 1` scaled, or +∞ for the bucket that reaches `end`.
fn upper_bound(hi: i128, end: i128, scale: f64) -> f64 {
    if hi >= end {
        f64::INFINITY
    } else {
        scaled((hi - 1) as f64, scale)
    }
}

impl HistLayout {
    /// The layout of `func` (`Hist` or `Lhist`) over an argument of the given
    /// signedness, with values scaled by `scale`; `None` for other functions.
    pub fn of(func: &AggFunc, signed: bool, scale: f64) -> Option<HistLayout> {
        let ranges: Vec<(i128, i128)> = match func {
            AggFunc::Hist(log2) => (0..log2.slots()).map(|i| log2.bounds(i, signed)).collect(),
            AggFunc::Lhist(l) => (0..l.slots()).map(|i| l.bounds(i, signed)).collect(),
            _ => return None,
        };
        let end = if signed { 1i128 << 63 } else { 1i128 << 64 };
        let mut bounds: Vec<f64> = vec![];
        for (lo, hi) in ranges {
            let le = upper_bound(hi, end, scale);
            // An empty range (an unsigned LHIST's underflow below 0) holds nothing;
            // bounds that round to one f64 are one bucket.
            if lo < hi && bounds.last().is_none_or(|&last| le > last) {
                bounds.push(le);
            }
        }
        Some(HistLayout { bounds, scale, end })
    }

    /// The non-cumulative counts of `buckets` on this layout: every bound,
    /// in order, with 0 where nothing was counted.
    pub fn fill(&self, buckets: &[Bucket]) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = self.bounds.iter().map(|&le| (le, 0)).collect();
        for b in buckets {
            let le = upper_bound(b.hi, self.end, self.scale);
            // The first bound ≥ le holds the bucket (equal, unless the layout merged bounds).
            let i = self.bounds.partition_point(|&x| x < le).min(out.len() - 1);
            out[i].1 += b.count;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebq_front::hist::{Linear, Log2};

    #[test]
    fn hist_layouts_run_from_the_first_bucket_to_the_top() {
        let u = HistLayout::of(&AggFunc::Hist(Log2::Floor), false, 1.0).unwrap();
        assert_eq!(u.bounds.len(), 65);
        assert_eq!(&u.bounds[..4], [0.0, 1.0, 3.0, 7.0]);
        assert_eq!(u.bounds[63], ((1u64 << 63) - 1) as f64);
        assert_eq!(u.bounds[64], f64::INFINITY);
        let s = HistLayout::of(&AggFunc::Hist(Log2::Floor), true, 1.0).unwrap();
        assert_eq!(&s.bounds[..3], [-1.0, 0.0, 1.0]);
        assert_eq!(s.bounds[63], ((1u64 << 62) - 1) as f64);
        assert_eq!(s.bounds.len(), 65);
        assert_eq!(s.bounds[64], f64::INFINITY);
        assert_eq!(HistLayout::of(&AggFunc::Count, false, 1.0), None);
    }

    #[test]
    fn ceil_hist_layouts_end_on_powers_of_two() {
        let c = HistLayout::of(&AggFunc::Hist(Log2::Ceil), false, 1.0).unwrap();
        assert_eq!(c.bounds.len(), 66);
        assert_eq!(&c.bounds[..5], [0.0, 1.0, 2.0, 4.0, 8.0]);
        assert_eq!(c.bounds[64], (1u64 << 63) as f64);
        assert_eq!(c.bounds[65], f64::INFINITY);
        // 4096 is in the bucket that ends at 4096.
        let b = Log2::Ceil.index(4096);
        let (lo, hi) = Log2::Ceil.bounds(b, false);
        let filled = c.fill(&[Bucket { lo, hi, count: 2 }]);
        assert_eq!(filled[b as usize], (4096.0, 2));
    }

    #[test]
    fn lhist_layouts_leave_out_an_empty_underflow() {
        let l = Linear { min: 0, max: 30, step: 10 };
        assert_eq!(HistLayout::of(&AggFunc::Lhist(l), false, 1.0).unwrap().bounds, [9.0, 19.0, 29.0, f64::INFINITY]);
        let l = Linear { min: 10, max: 20, step: 10 };
        assert_eq!(HistLayout::of(&AggFunc::Lhist(l), true, 1e-6).unwrap().bounds, [0.000009, 0.000019, f64::INFINITY]);
    }

    #[test]
    fn fill_places_every_bucket_and_keeps_empty_ones() {
        let l = HistLayout::of(&AggFunc::Hist(Log2::Floor), false, 1.0).unwrap();
        let filled = l.fill(&[Bucket { lo: 4096, hi: 8192, count: 3 }, Bucket { lo: 1 << 63, hi: 1 << 64, count: 1 }]);
        assert_eq!(filled.len(), 65);
        assert_eq!(filled[13], (8191.0, 3));
        assert_eq!(filled[64], (f64::INFINITY, 1));
        assert_eq!(filled.iter().map(|b| b.1).sum::<u64>(), 4);
    }
}
