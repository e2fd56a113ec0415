//! Histogram and quantile-sketch bucket math: the Rust mirror of the C that
//! codegen emits (`ebq_log2`, `ebq_hist_index`, `ebq_sketch_index`), plus the
//! bucket bounds and quantile estimates user space computes from the counts.
//!
//! Three bucketings, all mergeable by adding counts (across CPUs, panes and
//! groups):
//! - `HIST(x)`: log2 buckets like bpftrace's `hist()`: `[0, 1)`, `[1, 2)`,
//!   `[2, 4)`, … `[2^63, 2^64)`; a signed argument gets one more bucket in
//!   front for negative values. [`HIST_SLOTS`] counters inline in the group's value.
//! - `LHIST(x, min, max, step)`: `[min, min+step)`, … up to `max`, with an
//!   underflow bucket before and an overflow bucket after (at most
//!   [`LHIST_MAX_BUCKETS`] linear buckets).
//! - `QUANTILE(x, q)` / `P50` … `P999`: a log-linear sketch with
//!   [`SKETCH_SUB_BUCKETS`] linear sub-buckets per power of two; values below
//!   128 have buckets of width 1 (exact). A quantile is reported as the
//!   midpoint of the bucket holding the exact (nearest-rank) quantile, so it is
//!   within [`SKETCH_RELATIVE_ERROR`] (1/128 ≈ 0.78 %) of it.

/// Counters of a `HIST` value: bucket 0 for 0 (or, signed, for negatives), then one per power of two.
pub const HIST_SLOTS: u32 = 65;
/// The most linear buckets an `LHIST` may have (plus underflow and overflow):
/// its counters live in the group's map value, whose per-CPU size the kernel caps at 32 KiB.
pub const LHIST_MAX_BUCKETS: u64 = 1000;
/// Linear sub-buckets per power of two in the quantile sketch.
pub const SKETCH_SUB_BUCKETS: u64 = 64;
/// Bound on |estimate − exact| / |exact| for sketch quantiles: half a
/// sub-bucket's width over the smallest value in it, (2^(o−1)) / (64·2^o).
pub const SKETCH_RELATIVE_ERROR: f64 = 1.0 / 128.0;

/// One histogram bucket: values in `[lo, hi)` and how many events had one.
///
/// Bounds are `i128` so signed and unsigned arguments (up to 2^64) share one
/// type; the top bucket of an unsigned HIST is `[2^63, 2^64)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    /// Smallest value in the bucket.
    pub lo: i128,
    /// One past the largest value in the bucket.
    pub hi: i128,
    /// Events in the bucket.
    pub count: u64,
}

/// floor(log2(v)) for v > 0 (0 for v = 0): a five-step binary search, as bcc
/// and bpftrace do, because the verifier needs loop-free code.
pub fn log2(v: u64) -> u32 {
    let mut v = v;
    let mut r = u32::from(v > 0xFFFF_FFFF) << 5;
    v >>= r;
    let mut shift = u32::from(v > 0xFFFF) << 4;
    v >>= shift;
    r |= shift;
    shift = u32::from(v > 0xFF) << 3;
    v >>= shift;
    r |= shift;
    shift = u32::from(v > 0xF) << 2;
    v >>= shift;
    r |= shift;
    shift = u32::from(v > 0x3) << 1;
    v >>= shift;
    r |= shift;
    r | (v >> 1) as u32
}

/// HIST bucket of an unsigned value: 0 for 0, else 1 + floor(log2 v) (1..=64).
pub fn hist_index(v: u64) -> u32 {
    if v == 0 {
        0
    } else {
        1 + log2(v)
    }
}

/// HIST bucket of a signed value: 0 for negatives, else 1 + [`hist_index`] (1..=64).
pub fn hist_index_signed(v: i64) -> u32 {
    if v < 0 {
        0
    } else {
        1 + hist_index(v as u64)
    }
}

/// Bounds of HIST bucket `i`.
pub fn hist_bounds(i: u32, signed: bool) -> (i128, i128) {
    let unsigned = |i: u32| if i == 0 { (0, 1) } else { (1i128 << (i - 1), 1i128 << i) };
    match (signed, i) {
        (true, 0) => (i128::from(i64::MIN), 0),
        (true, i) => unsigned(i - 1),
        (false, i) => unsigned(i),
    }
}

/// An LHIST's parameters, validated by the binder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Linear {
    /// Start of the first linear bucket.
    pub min: i64,
    /// End of the last linear bucket (values ≥ max overflow).
    pub max: i64,
    /// Bucket width (> 0).
    pub step: u64,
}

impl Linear {
    /// Linear buckets between min and max (the last one may be narrower).
    pub fn buckets(&self) -> u64 {
        let span = (i128::from(self.max) - i128::from(self.min)) as u128;
        span.div_ceil(u128::from(self.step)) as u64
    }

    /// Counters in the value: underflow, the linear buckets, overflow.
    pub fn slots(&self) -> u32 {
        self.buckets() as u32 + 2
    }

    /// The bucket of `v` (the argument as i128, so signed and unsigned share it).
    pub fn index(&self, v: i128) -> u32 {
        let (min, max) = (i128::from(self.min), i128::from(self.max));
        if v < min {
            0
        } else if v >= max {
            self.buckets() as u32 + 1
        } else {
            1 + ((v - min) as u128 / u128::from(self.step)) as u32
        }
    }

    /// Bounds of bucket `i`; underflow and overflow reach the type's limits.
    pub fn bounds(&self, i: u32, signed: bool) -> (i128, i128) {
        let (type_min, type_end) = if signed { (i128::from(i64::MIN), 1i128 << 63) } else { (0, 1i128 << 64) };
        let (min, max, step) = (i128::from(self.min), i128::from(self.max), i128::from(self.step));
        let n = self.buckets() as u32;
        if i == 0 {
            (type_min, min)
        } else if i > n {
            (max, type_end)
        } else {
            let lo = min + i128::from(i - 1) * step;
            (lo, (lo + step).min(max))
        }
    }
}

/// Sketch bucket of an unsigned value: exact below 128, then 64 linear
/// sub-buckets per power of two (0..=3775).
pub fn sketch_index(v: u64) -> i32 {
    if v < SKETCH_SUB_BUCKETS {
        return v as i32;
    }
    let k = log2(v); // 6..=63
    let sub = (v >> (k - 6)) & 63;
    (64 + ((k - 6) << 6) + sub as u32) as i32
}

/// Sketch bucket of a signed value: negatives mirror positives below −1, so
/// bucket order is value order.
pub fn sketch_index_signed(v: i64) -> i32 {
    if v < 0 {
        -1 - sketch_index(v.unsigned_abs())
    } else {
        sketch_index(v as u64)
    }
}

/// Bounds of sketch bucket `s`.
pub fn sketch_bounds(s: i32) -> (i128, i128) {
    if s < 0 {
        let (lo, hi) = sketch_bounds(-1 - s);
        return (1 - hi, 1 - lo);
    }
    let s = s as u64;
    if s < SKETCH_SUB_BUCKETS {
        return (i128::from(s), i128::from(s) + 1);
    }
    let (octave, sub) = ((s - 64) / 64, (s - 64) % 64);
    let lo = i128::from(64 + sub) << octave;
    (lo, lo + (1i128 << octave))
}

/// The value a sketch bucket reports: its midpoint (exact for width-1 buckets).
pub fn sketch_estimate(s: i32) -> i128 {
    if s < 0 {
        return -sketch_estimate(-1 - s);
    }
    let (lo, hi) = sketch_bounds(s);
    lo + (hi - lo) / 2
}

/// The nearest-rank `q`-quantile (`ppm` millionths) from sketch buckets in
/// ascending bucket order: the estimate of the bucket holding the ⌈q·n⌉-th
/// smallest value. `None` without values.
pub fn sketch_quantile(buckets: impl IntoIterator<Item = (i32, u64)>, ppm: u32) -> Option<i128> {
    let buckets: Vec<(i32, u64)> = buckets.into_iter().filter(|b| b.1 > 0).collect();
    let n: u128 = buckets.iter().map(|b| u128::from(b.1)).sum();
    if n == 0 {
        return None;
    }
    let rank = nearest_rank(n, ppm);
    let mut seen = 0u128;
    for (s, c) in &buckets {
        seen += u128::from(*c);
        if seen >= rank {
            return Some(sketch_estimate(*s));
        }
    }
    buckets.last().map(|b| sketch_estimate(b.0))
}

/// ⌈q·n⌉ clamped to 1..=n, with q = ppm / 10^6: the 1-based rank of the nearest-rank quantile.
pub fn nearest_rank(n: u128, ppm: u32) -> u128 {
    (u128::from(ppm) * n).div_ceil(1_000_000).clamp(1, n.max(1))
}

/// The exact nearest-rank quantile of `values` (sorted in place), for tests and comparisons.
pub fn exact_quantile(values: &mut [i128], ppm: u32) -> Option<i128> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = nearest_rank(values.len() as u128, ppm);
    Some(values[rank as usize - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_and_hist_index_at_powers_of_two() {
        assert_eq!(hist_index(0), 0);
        assert_eq!(hist_index(1), 1);
        assert_eq!(hist_index(u64::MAX), 64);
        for k in 1..64u32 {
            let p = 1u64 << k;
            assert_eq!(log2(p), k);
            assert_eq!(log2(p - 1), k - 1, "2^{k}-1");
            assert_eq!(hist_index(p), k + 1);
            assert_eq!(hist_index(p - 1), k);
            let (lo, hi) = hist_bounds(hist_index(p), false);
            assert_eq!((lo, hi), (i128::from(p), 2 * i128::from(p)));
        }
        assert_eq!(hist_bounds(64, false), (1i128 << 63, 1i128 << 64));
        assert_eq!(hist_bounds(0, false), (0, 1));
    }

    #[test]
    fn signed_hist_puts_negatives_first() {
        assert_eq!(hist_index_signed(-1), 0);
        assert_eq!(hist_index_signed(i64::MIN), 0);
        assert_eq!(hist_index_signed(0), 1);
        assert_eq!(hist_index_signed(1), 2);
        assert_eq!(hist_index_signed(i64::MAX), 64);
        assert_eq!(hist_bounds(0, true), (i128::from(i64::MIN), 0));
        assert_eq!(hist_bounds(1, true), (0, 1));
        assert_eq!(hist_bounds(64, true), (1i128 << 62, 1i128 << 63));
        for v in [0i64, 1, 2, 3, 4, 1000, i64::MAX, -5] {
            let (lo, hi) = hist_bounds(hist_index_signed(v), true);
            assert!(lo <= i128::from(v) && i128::from(v) < hi, "{v} in [{lo}, {hi})");
        }
    }

    #[test]
    fn lhist_edges() {
        let l = Linear { min: 0, max: 100, step: 10 };
        assert_eq!(l.buckets(), 10);
        assert_eq!(l.slots(), 12);
        assert_eq!(l.index(-1), 0);
        assert_eq!(l.index(0), 1);
        assert_eq!(l.index(9), 1);
        assert_eq!(l.index(10), 2);
        assert_eq!(l.index(99), 10);
        assert_eq!(l.index(100), 11);
        assert_eq!(l.index(i128::from(u64::MAX)), 11);
        assert_eq!(l.bounds(0, false), (0, 0));
        assert_eq!(l.bounds(1, false), (0, 10));
        assert_eq!(l.bounds(10, false), (90, 100));
        assert_eq!(l.bounds(11, false), (100, 1i128 << 64));
        // A last bucket narrower than step ends at max.
        let l = Linear { min: -5, max: 20, step: 10 };
        assert_eq!(l.buckets(), 3);
        assert_eq!(l.bounds(3, true), (15, 20));
        assert_eq!(l.index(-6), 0);
        assert_eq!(l.index(-5), 1);
        assert_eq!(l.index(19), 3);
        assert_eq!(l.index(20), 4);
        assert_eq!(l.bounds(0, true), (i128::from(i64::MIN), -5));
        let wide = Linear { min: i64::MIN, max: i64::MAX, step: u64::MAX / 999 };
        assert!(wide.buckets() <= LHIST_MAX_BUCKETS);
        assert_eq!(wide.index(i128::from(i64::MAX) - 1), wide.buckets() as u32);
    }

    #[test]
    fn sketch_buckets_tile_the_line_in_order() {
        assert_eq!(sketch_index(u64::MAX), 3775);
        let mut prev = (0i128, 0i128);
        for s in 0..=3775 {
            let (lo, hi) = sketch_bounds(s);
            assert_eq!(lo, prev.1, "bucket {s} starts where {} ends", s - 1);
            assert_eq!(sketch_index(lo as u64), s);
            assert_eq!(sketch_index((hi - 1) as u64), s);
            prev = (lo, hi);
        }
        assert_eq!(prev.1, 1i128 << 64);
        for v in [-1i64, -2, -127, -128, -129, -1000, i64::MIN] {
            let (lo, hi) = sketch_bounds(sketch_index_signed(v));
            assert!(lo <= i128::from(v) && i128::from(v) < hi, "{v} in [{lo}, {hi})");
        }
        assert!(sketch_index_signed(-1) < sketch_index_signed(0));
        assert!(sketch_index_signed(-1000) < sketch_index_signed(-999));
    }

    #[test]
    fn sketch_estimates_are_within_the_bound() {
        let mut worst = 0f64;
        let mut check = |v: i128| {
            let s = if v < 0 { sketch_index_signed(v as i64) } else { sketch_index(v as u64) };
            let e = sketch_estimate(s);
            let err = (e - v).unsigned_abs() as f64 / (v.unsigned_abs() as f64).max(1.0);
            assert!(err <= SKETCH_RELATIVE_ERROR, "{v}: estimate {e}, error {err}");
            worst = worst.max(err);
        };
        for v in 0..5000 {
            check(v);
            check(-v);
        }
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(i128::from(x >> (x % 60)));
        }
        for k in 7..64 {
            check((1i128 << k) + (1i128 << (k - 6)) - 1);
        }
        check(i128::from(u64::MAX));
        assert!(worst > 0.007, "the bound is tight: worst seen {worst}");
    }

    #[test]
    fn sketch_quantiles_match_exact_ones_within_the_bound() {
        let mut x: u64 = 12345;
        let mut values: Vec<i128> = (0..20_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                i128::from((x >> 33) % 1_000_000)
            })
            .collect();
        let mut counts = std::collections::BTreeMap::new();
        for v in &values {
            *counts.entry(sketch_index(*v as u64)).or_insert(0u64) += 1;
        }
        for ppm in [1, 10_000, 500_000, 900_000, 990_000, 999_000, 1_000_000] {
            let exact = exact_quantile(&mut values, ppm).unwrap();
            let est = sketch_quantile(counts.iter().map(|(s, c)| (*s, *c)), ppm).unwrap();
            let err = (est - exact).unsigned_abs() as f64 / exact.max(1) as f64;
            assert!(err <= SKETCH_RELATIVE_ERROR, "q={ppm}ppm: {est} vs {exact}");
        }
        assert_eq!(sketch_quantile([(5, 1), (7, 1)], 500_000), Some(5));
        assert_eq!(sketch_quantile([(5, 1), (7, 1)], 500_001), Some(7));
        assert_eq!(sketch_quantile(std::iter::empty(), 500_000), None);
    }
}
