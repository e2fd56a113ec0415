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
//! - `QUANTILE(x, q)` / `P50` … `P999`: an exponential sketch, the buckets of
//!   OpenTelemetry's ExponentialHistogram at scale [`SKETCH_SCALE`] (= Prometheus
//!   native histogram schema 6): bucket `i` holds the values in
//!   `(base^i, base^(i+1)]`, base = 2^(2^−6), 64 buckets per power of two, a
//!   zero bucket for 0 and mirrored buckets for negative values. So a sketch
//!   exports as a native histogram with no re-bucketing, and sketches from many
//!   hosts merge by adding counts. A quantile is reported as the middle integer
//!   of the bucket holding the exact (nearest-rank) quantile: exact while a
//!   bucket holds one integer (below [`SKETCH_EXACT_BELOW`]), and always within
//!   [`SKETCH_RELATIVE_ERROR`] (base − 1 ≈ 1.09 %) of it.
//!
//! The bucket index is computed without floating point, in BPF as here:
//! `k = floor(log2(v − 1))` by bit scan puts `v` in `(2^k, 2^(k+1)]`, and the
//! sub-bucket is how many of the 63 inner boundaries `2^(k + m/64)` lie below
//! `v`, found by a six-step binary search of [`EXP_BOUNDS`] (the boundaries as
//! 64-bit fixed point, `floor(2^(63 + m/64))`) against `v`'s mantissa.

/// Counters of a `HIST` value: bucket 0 for 0 (or, signed, for negatives), then one per power of two.
pub const HIST_SLOTS: u32 = 65;

/// Which side of each power of two a `HIST` bucket closes on.
///
/// bpftrace and bcc print `[2^k, 2^(k+1))` ([`Log2::Floor`], ebq's default:
/// its histograms read like theirs). Prometheus' native histograms and
/// OTel's ExponentialHistogram at scale 0 hold `(2^k, 2^(k+1)]`
/// ([`Log2::Ceil`]): a value that is an exact power of two sits one bucket
/// lower there, so Floor counts cannot become native buckets without
/// knowing how many values were exact powers. The exporters (`ebq serve`,
/// `--otlp`) plan their HISTs with Ceil, whose counts *are* native schema-0
/// buckets; the kernel's cost is the same (a subtraction before the bit scan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Log2 {
    /// `[0, 1)`, `[1, 2)`, `[2, 4)`, … `[2^63, 2^64)`: [`HIST_SLOTS`] counters.
    #[default]
    Floor,
    /// `{0}`, `(0, 1]`, `(1, 2]`, `(2, 4]`, … `(2^63, 2^64)`: one counter more
    /// (2^64 − 1 needs a 65th power-of-two bucket).
    Ceil,
}

impl Log2 {
    /// Counters per value: 65 for Floor, 66 for Ceil (signed or not).
    pub fn slots(self) -> u32 {
        match self {
            Log2::Floor => HIST_SLOTS,
            Log2::Ceil => HIST_SLOTS + 1,
        }
    }

    /// The bucket of an unsigned value.
    pub fn index(self, v: u64) -> u32 {
        match (self, v) {
            (Log2::Floor, v) => hist_index(v),
            (Log2::Ceil, 0) => 0,
            (Log2::Ceil, 1) => 1,
            // ceil(log2 v) = 1 + floor(log2(v − 1)) for v ≥ 2, shifted past the zero bucket.
            (Log2::Ceil, v) => 2 + log2(v - 1),
        }
    }

    /// The bucket of a signed value: 0 for negatives, the rest shifted by one.
    pub fn index_signed(self, v: i64) -> u32 {
        if v < 0 {
            0
        } else {
            1 + self.index(v as u64)
        }
    }

    /// Bounds `[lo, hi)` of bucket `i`.
    pub fn bounds(self, i: u32, signed: bool) -> (i128, i128) {
        match self {
            Log2::Floor => hist_bounds(i, signed),
            Log2::Ceil => {
                let unsigned = |i: u32| match i {
                    0 => (0, 1),
                    1 => (1, 2),
                    i => ((1i128 << (i - 2)) + 1, (1i128 << (i - 1)) + 1),
                };
                let (lo, hi) = match (signed, i) {
                    (true, 0) => return (i128::from(i64::MIN), 0),
                    (true, i) => unsigned(i - 1),
                    (false, i) => unsigned(i),
                };
                // The top bucket ends at the type's end.
                (lo, hi.min(if signed { 1i128 << 63 } else { 1i128 << 64 }))
            }
        }
    }
}
/// The most linear buckets an `LHIST` may have (plus underflow and overflow):
/// its counters live in the group's map value, whose per-CPU size the kernel caps at 32 KiB.
pub const LHIST_MAX_BUCKETS: u64 = 1000;
/// The sketch's exponential scale (OTel `scale`, Prometheus `schema`): 2^6 buckets per power of two.
pub const SKETCH_SCALE: i32 = 6;
/// Bound on |estimate − exact| / |exact| for sketch quantiles: a bucket's
/// width over its lower bound, base − 1 = 2^(1/64) − 1 ≈ 1.089 % (the bound
/// Prometheus' `histogram_quantile` has on the same buckets).
pub const SKETCH_RELATIVE_ERROR: f64 = 0.010_889_286_051_700_5;
/// Below this every sketch bucket holds at most one integer (its width, 1.09 %
/// of its bound, is under 1), so quantiles of smaller values are exact.
pub const SKETCH_EXACT_BELOW: u64 = 92;
/// The sketch's inner boundaries as 64-bit fixed point: `EXP_BOUNDS[m]` =
/// floor(2^(63 + m/64)), so `2^(k + m/64) < v` iff `EXP_BOUNDS[m] <= ((v−1) << (63−k)) | (2^(63−k) − 1)`
/// for `v` in `(2^k, 2^(k+1)]`. Checked against the exact definition (a 64th
/// power in big integers) by the tests; codegen emits the same table.
pub const EXP_BOUNDS: [u64; 64] = [
    0x8000000000000000,
    0x8164D1F3BC030773,
    0x82CD8698AC2BA1D7,
    0x843A28C3ACDE4046,
    0x85AAC367CC487B14,
    0x871F61969E8D1010,
    0x88980E8092DA8527,
    0x8A14D575496EFD9A,
    0x8B95C1E3EA8BD6E6,
    0x8D1ADF5B7E5BA9E5,
    0x8EA4398B45CD53C0,
    0x9031DC431466B1DC,
    0x91C3D373AB11C336,
    0x935A2B2F13E6E92B,
    0x94F4EFA8FEF70961,
    0x96942D3720185A00,
    0x9837F0518DB8A96F,
    0x99E0459320B7FA64,
    0x9B8D39B9D54E5538,
    0x9D3ED9A72CFFB750,
    0x9EF5326091A111AD,
    0xA0B0510FB9714FC2,
    0xA27043030C496818,
    0xA43515AE09E6809E,
    0xA5FED6A9B15138EA,
    0xA7CD93B4E9653569,
    0xA9A15AB4EA7C0EF8,
    0xAB7A39B5A93ED337,
    0xAD583EEA42A14AC6,
    0xAF3B78AD690A4374,
    0xB123F581D2AC258F,
    0xB311C412A9112489,
    0xB504F333F9DE6484,
    0xB6FD91E328D17791,
    0xB8FBAF4762FB9EE9,
    0xBAFF5AB2133E45FB,
    0xBD08A39F580C36BE,
    0xBF1799B67A731082,
    0xC12C4CCA66709456,
    0xC346CCDA24976407,
    0xC5672A115506DADD,
    0xC78D74C8ABB9B15C,
    0xC9B9BD866E2F27A2,
    0xCBEC14FEF2727C5C,
    0xCE248C151F8480E3,
    0xD06333DAEF2B2594,
    0xD2A81D91F12AE45A,
    0xD4F35AABCFEDFA1F,
    0xD744FCCAD69D6AF4,
    0xD99D15C278AFD7B5,
    0xDBFBB797DAF23755,
    0xDE60F4825E0E9123,
    0xE0CCDEEC2A94E111,
    0xE33F8972BE8A5A51,
    0xE5B906E77C8348A8,
    0xE8396A503C4BDC68,
    0xEAC0C6E7DD24392E,
    0xED4F301ED9942B84,
    0xEFE4B99BDCDAF5CB,
    0xF281773C59FFB139,
    0xF5257D152486CC2C,
    0xF7D0DF730AD13BB8,
    0xFA83B2DB722A033A,
    0xFD3E0C0CF486C174,
];

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

/// The OTel/Prometheus bucket index of `v` ≥ 1 at scale 6: the `i` with
/// base^i < v ≤ base^(i+1) (−1 for 1, 63 for 2, 4095 for 2^64 − 1).
pub fn exp_index(v: u64) -> i32 {
    if v <= 1 {
        return -1;
    }
    let u = v - 1;
    let k = log2(u);
    let s = 63 - k;
    let y = (u << s) | ((1u64 << s) - 1);
    let mut j = 0usize;
    for step in [32, 16, 8, 4, 2, 1] {
        if EXP_BOUNDS[j + step] <= y {
            j += step;
        }
    }
    (k * 64) as i32 + j as i32
}

/// floor(base^i) for −1 ≤ i ≤ 4096 (0 for i = −1): the integers of bucket `i`
/// are floor(base^i) + 1 ..= floor(base^(i+1)).
pub fn exp_floor(i: i32) -> i128 {
    if i < 0 {
        return 0;
    }
    let (k, m) = ((i / 64) as u32, (i % 64) as usize);
    if k >= 63 {
        // 2^63 · 2^(m/64) (k = 63) or 2^64 (i = 4096): the table is 2^63-scaled already.
        return i128::from(EXP_BOUNDS[m]) << (k - 63);
    }
    i128::from(EXP_BOUNDS[m] >> (63 - k))
}

/// Sketch bucket code of an unsigned value, ordered like the values: 0 for 0,
/// else the OTel index + 2 (1 ..= 4097).
pub fn sketch_index(v: u64) -> i32 {
    if v == 0 {
        0
    } else {
        exp_index(v) + 2
    }
}

/// Sketch bucket code of a signed value: a negative value's code is minus
/// that of its magnitude, so code order is still value order.
pub fn sketch_index_signed(v: i64) -> i32 {
    if v < 0 {
        -sketch_index(v.unsigned_abs())
    } else {
        sketch_index(v as u64)
    }
}

/// Which exponential bucket a sketch code is: `None` for the zero bucket,
/// else `(negative, OTel index)`.
pub fn sketch_otel(code: i32) -> Option<(bool, i32)> {
    match code {
        0 => None,
        c if c > 0 => Some((false, c - 2)),
        c => Some((true, -c - 2)),
    }
}

/// The integers of sketch bucket `code` as `[lo, hi)` (empty, lo = hi, for
/// the buckets below 92 that hold no integer).
pub fn sketch_bounds(code: i32) -> (i128, i128) {
    match sketch_otel(code) {
        None => (0, 1),
        // The top bucket, (base^4095, 2^64], ends at the type's end.
        Some((false, i)) => (exp_floor(i) + 1, (exp_floor(i + 1) + 1).min(1i128 << 64)),
        Some((true, i)) => (-exp_floor(i + 1), -exp_floor(i)),
    }
}

/// The value a sketch bucket reports: its middle integer (the integer, for a
/// bucket that holds one).
pub fn sketch_estimate(code: i32) -> i128 {
    if code < 0 {
        return -sketch_estimate(-code);
    }
    let (lo, hi) = sketch_bounds(code);
    lo + (hi - 1 - lo).max(0) / 2
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
    fn ceil_buckets_close_on_the_power_of_two_and_hold_every_value() {
        let c = Log2::Ceil;
        assert_eq!(c.slots(), 66);
        assert_eq!([0, 1, 2, 3, 4, 5, 8, 9].map(|v| c.index(v)), [0, 1, 2, 3, 3, 4, 4, 5]);
        assert_eq!(c.index(u64::MAX), 65);
        assert_eq!(c.bounds(65, false), ((1i128 << 63) + 1, 1i128 << 64));
        assert_eq!(c.index_signed(i64::MAX), 65);
        assert_eq!(c.bounds(65, true), ((1i128 << 62) + 1, 1i128 << 63));
        assert_eq!((c.index_signed(-7), c.index_signed(0), c.index_signed(4)), (0, 1, 4));
        for k in 0..64u32 {
            let p = 1u64 << k;
            // 2^k is the top of its bucket: (2^(k-1), 2^k].
            let (lo, hi) = c.bounds(c.index(p), false);
            assert_eq!(hi, i128::from(p) + 1, "2^{k}");
            assert!(lo <= i128::from(p));
            assert_eq!(c.index(p + 1), c.index(p) + 1, "2^{k} + 1 starts the next bucket");
        }
        let mut v = 1u64;
        while v < u64::MAX / 7 {
            for x in [v, v + 1, v / 2 * 3] {
                let (lo, hi) = c.bounds(c.index(x), false);
                assert!(lo <= i128::from(x) && i128::from(x) < hi, "{x} in [{lo}, {hi})");
                let (lo, hi) = c.bounds(c.index_signed(x as i64), true);
                assert!(lo <= i128::from(x) && i128::from(x) < hi, "signed {x} in [{lo}, {hi})");
            }
            v = v * 7 / 3 + 1;
        }
    }

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

    /// Unsigned big integers as little-endian u64 limbs: enough to check
    /// base^i < v, i.e. v^64 > 2^i, exactly.
    fn big_mul(a: &[u64], b: &[u64]) -> Vec<u64> {
        let mut out = vec![0u64; a.len() + b.len()];
        for (i, &x) in a.iter().enumerate() {
            let mut carry = 0u128;
            for (j, &y) in b.iter().enumerate() {
                let t = u128::from(out[i + j]) + u128::from(x) * u128::from(y) + carry;
                out[i + j] = t as u64;
                carry = t >> 64;
            }
            out[i + b.len()] = carry as u64;
        }
        while out.len() > 1 && out.last() == Some(&0) {
            out.pop();
        }
        out
    }

    /// v^64 in limbs (six squarings).
    fn pow64(v: u128) -> Vec<u64> {
        let mut x = vec![v as u64, (v >> 64) as u64];
        for _ in 0..6 {
            x = big_mul(&x, &x);
        }
        x
    }

    /// Compares v^64 with 2^e.
    fn cmp_pow64_pow2(v: u128, e: u32) -> std::cmp::Ordering {
        let x = pow64(v);
        let top = x.iter().rposition(|&l| l != 0).unwrap_or(0);
        let bits = top as u32 * 64 + (64 - x[top].leading_zeros());
        // 2^e has e + 1 bits; with as many, v^64 equals it iff it has one bit set.
        match bits.cmp(&(e + 1)) {
            std::cmp::Ordering::Equal if x.iter().map(|l| l.count_ones()).sum::<u32>() == 1 => {
                std::cmp::Ordering::Equal
            }
            std::cmp::Ordering::Equal => std::cmp::Ordering::Greater,
            o => o,
        }
    }

    /// The spec's definition, exactly: bucket i of scale 6 holds (2^(i/64), 2^((i+1)/64)];
    /// for i ≥ 0, v > 2^(i/64) iff v^64 > 2^i.
    fn in_otel_bucket(v: u64, i: i32) -> bool {
        let above_lower = i < 0 || cmp_pow64_pow2(u128::from(v), i as u32) == std::cmp::Ordering::Greater;
        let within_upper = cmp_pow64_pow2(u128::from(v), (i + 1) as u32) != std::cmp::Ordering::Greater;
        above_lower && within_upper
    }

    #[test]
    fn exp_bounds_are_the_floors_of_the_spec_boundaries() {
        // floor(2^(63 + m/64)) = c  iff  c^64 <= 2^(63·64 + m) < (c+1)^64.
        for (m, &c) in EXP_BOUNDS.iter().enumerate() {
            let e = 63 * 64 + m as u32;
            assert_ne!(cmp_pow64_pow2(u128::from(c), e), std::cmp::Ordering::Greater, "m={m}");
            assert_eq!(cmp_pow64_pow2(u128::from(c) + 1, e), std::cmp::Ordering::Greater, "m={m}");
        }
        // And the f64 formula of OTel's reference mapping agrees to its precision.
        for (m, &c) in EXP_BOUNDS.iter().enumerate() {
            let f = 2f64.powf(63.0 + m as f64 / 64.0);
            assert!(((c as f64) - f).abs() / f < 1e-15, "m={m}");
        }
    }

    #[test]
    fn exp_index_matches_the_spec_at_every_boundary() {
        assert_eq!(exp_index(1), -1);
        assert_eq!(exp_index(2), 63);
        assert_eq!(exp_index(3), 101, "ceil(64·log2 3) − 1");
        assert_eq!(exp_index(u64::MAX), 4095);
        for k in 1..64u32 {
            let p = 1u64 << k;
            assert_eq!(exp_index(p), 64 * k as i32 - 1, "2^{k} is the top of its bucket");
            if k >= 7 {
                assert_eq!(exp_index(p + 1), 64 * k as i32, "2^{k}+1 (the first bucket above 2^{k} is wider than 1)");
            }
        }
        // Around every integer boundary floor(base^i) the index steps exactly there.
        for i in 0..4096 {
            let f = exp_floor(i);
            for v in [f - 1, f, f + 1, f + 2] {
                if (1..=i128::from(u64::MAX)).contains(&v) {
                    let v = v as u64;
                    assert!(in_otel_bucket(v, exp_index(v)), "v={v} index {}", exp_index(v));
                }
            }
        }
        for v in 1..3000u64 {
            assert!(in_otel_bucket(v, exp_index(v)), "v={v}");
        }
    }

    proptest::proptest! {
        #[test]
        fn exp_index_is_the_spec_bucket(v in 1u64.., shift in 0u32..64) {
            let v = (v >> shift).max(1);
            proptest::prop_assert!(in_otel_bucket(v, exp_index(v)), "v={} index {}", v, exp_index(v));
            let (lo, hi) = sketch_bounds(sketch_index(v));
            proptest::prop_assert!(lo <= i128::from(v) && i128::from(v) < hi);
            let e = sketch_estimate(sketch_index(v));
            let err = (e - i128::from(v)).unsigned_abs() as f64 / v as f64;
            proptest::prop_assert!(err <= SKETCH_RELATIVE_ERROR, "v={} estimate {} error {}", v, e, err);
        }

        #[test]
        fn signed_sketch_codes_keep_value_order(a in proptest::num::i64::ANY, b in proptest::num::i64::ANY) {
            let (ca, cb) = (sketch_index_signed(a), sketch_index_signed(b));
            if a < b {
                proptest::prop_assert!(ca <= cb);
            }
            let (lo, hi) = sketch_bounds(ca);
            proptest::prop_assert!(lo <= i128::from(a) && i128::from(a) < hi, "{} in [{}, {})", a, lo, hi);
        }
    }

    #[test]
    fn sketch_buckets_tile_the_line_in_order() {
        assert_eq!(sketch_index(u64::MAX), 4097);
        let mut prev = (0i128, 0i128);
        for s in 0..=4097 {
            let (lo, hi) = sketch_bounds(s);
            assert_eq!(lo, prev.1, "bucket {s} starts where {} ends", s - 1);
            assert!(lo <= hi);
            if lo < hi {
                assert_eq!(sketch_index(lo as u64), s);
                assert_eq!(sketch_index((hi - 1) as u64), s);
            }
            prev = (lo, hi);
        }
        assert_eq!(prev.1, 1i128 << 64);
        for v in [-1i64, -2, -127, -128, -129, -1000, i64::MIN] {
            let (lo, hi) = sketch_bounds(sketch_index_signed(v));
            assert!(lo <= i128::from(v) && i128::from(v) < hi, "{v} in [{lo}, {hi})");
        }
        assert!(sketch_index_signed(-1) < sketch_index_signed(0));
        assert!(sketch_index_signed(-2000) < sketch_index_signed(-1000));
        assert!(sketch_index_signed(-90) < sketch_index_signed(-89), "one integer per bucket below 92");
        assert_eq!(sketch_otel(sketch_index(1)), Some((false, -1)));
        assert_eq!(sketch_otel(sketch_index_signed(-2)), Some((true, 63)));
        assert_eq!(sketch_otel(0), None);
    }

    #[test]
    fn sketch_estimates_are_within_the_bound() {
        let mut worst = 0f64;
        let mut check = |v: i128| {
            let s = if v < 0 { sketch_index_signed(v as i64) } else { sketch_index(v as u64) };
            let e = sketch_estimate(s);
            let err = (e - v).unsigned_abs() as f64 / (v.unsigned_abs() as f64).max(1.0);
            assert!(err <= SKETCH_RELATIVE_ERROR, "{v}: estimate {e}, error {err}");
            if v.unsigned_abs() < u128::from(SKETCH_EXACT_BELOW) {
                assert_eq!(e, v, "exact below {SKETCH_EXACT_BELOW}");
            }
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
        for i in 0..4095 {
            check(exp_floor(i) + 1);
            check(exp_floor(i + 1));
        }
        check(i128::from(u64::MAX));
        assert!(worst > 0.005, "the middle of a bucket is about half its width away: worst seen {worst}");
        // Bucket width first exceeds one integer at 92.
        assert!((0..=4096).filter(|&i| exp_floor(i) < 91).all(|i| exp_floor(i + 1) - exp_floor(i) <= 1));
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
        assert_eq!(sketch_quantile([(sketch_index(5), 1), (sketch_index(7), 1)], 500_000), Some(5));
        assert_eq!(sketch_quantile([(sketch_index(5), 1), (sketch_index(7), 1)], 500_001), Some(7));
        assert_eq!(sketch_quantile(std::iter::empty(), 500_000), None);
    }
}
