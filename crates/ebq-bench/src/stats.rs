//! Small-sample statistics for repeated benchmark rounds: a median with a
//! distribution-free confidence interval, so a table cell can say how much of
//! it is noise (a load spike from another process is one outlier among the
//! rounds, not a shifted mean).

use serde_json::{json, Value};

/// The median of `xs` with a confidence interval from order statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The median.
    pub median: f64,
    /// Lower end of the interval.
    pub lo: f64,
    /// Upper end of the interval.
    pub hi: f64,
    /// The interval's exact coverage (e.g. 0.969 for six rounds).
    pub coverage: f64,
    /// Samples.
    pub n: usize,
}

/// P(Binomial(n, ½) ≤ k).
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    let mut c = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            c = c * (n + 1 - i) as f64 / i as f64;
        }
        sum += c;
    }
    sum / 2f64.powi(n as i32)
}

/// The median and the narrowest order-statistic interval [x(k), x(n+1−k)]
/// covering the true median with probability ≥ 90 % (whatever the
/// distribution): with eight samples [x(2), x(7)] (93 %), so one outlying
/// sample on each side (a load spike) does not widen it; with too few samples
/// for 90 % it is the whole range and `coverage` says what that is worth
/// (87.5 % for four). None when empty.
pub fn estimate(xs: &[f64]) -> Option<Estimate> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
    let k = interval_rank(n);
    Some(Estimate { median, lo: v[k - 1], hi: v[n - k], coverage: coverage(n), n })
}

/// Coverage of [x(k), x(n+1−k)]: 1 − 2·P(Bin(n, ½) ≤ k − 1).
fn cover(n: usize, k: usize) -> f64 {
    1.0 - 2.0 * binom_half_cdf(n, k - 1)
}

/// The k of the narrowest interval [x(k), x(n+1−k)] still covering ≥ 90 % (1 if none does).
fn interval_rank(n: usize) -> usize {
    let mut k = 1;
    while 2 * (k + 1) <= n + 1 && cover(n, k + 1) >= 0.90 {
        k += 1;
    }
    k
}

/// The coverage of [`estimate`]'s interval for `n` samples (0 for one sample).
pub fn coverage(n: usize) -> f64 {
    if n < 2 {
        0.0
    } else {
        cover(n, interval_rank(n))
    }
}

impl Estimate {
    /// `{median, lo, hi, coverage, n}` for results.json.
    pub fn to_json(self) -> Value {
        json!({ "median": self.median, "lo": self.lo, "hi": self.hi, "coverage": self.coverage, "n": self.n })
    }
}

/// A table cell from an [`Estimate`]'s JSON: `12.3 ±1.4`, or `≈0 ±1.4`
/// when the interval includes zero (a small or negative median is noise, not
/// a gain), or just the median when there was a single sample.
/// A bare number (results written before the rounds existed) is shown as is.
pub fn cell(e: &Value, digits: usize) -> String {
    if let Some(x) = e.as_f64() {
        return format!("{x:.digits$}");
    }
    let (Some(m), Some(lo), Some(hi)) = (e["median"].as_f64(), e["lo"].as_f64(), e["hi"].as_f64()) else {
        return "—".into();
    };
    if e["n"].as_u64().unwrap_or(0) < 2 {
        return format!("{m:.digits$}");
    }
    let h = (m - lo).max(hi - m);
    if lo <= 0.0 && hi >= 0.0 {
        format!("≈0 ±{h:.digits$}")
    } else {
        format!("{m:.digits$} ±{h:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_order_statistic_interval() {
        // Six samples: [x(1), x(6)] covers 1 − 2/64 = 96.9 %; [x(2), x(5)] only 78 %.
        let e = estimate(&[5.0, 1.0, 3.0, 2.0, 4.0, 100.0]).unwrap();
        assert_eq!((e.median, e.lo, e.hi, e.n), (3.5, 1.0, 100.0, 6));
        assert!((e.coverage - 62.0 / 64.0).abs() < 1e-12);
        // Nine samples: [x(2), x(8)] covers 1 − 2·10/512 = 96.1 %.
        let e = estimate(&[9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]).unwrap();
        assert_eq!((e.median, e.lo, e.hi), (5.0, 2.0, 8.0));
        assert!((e.coverage - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        // Eight: [x(2), x(7)] covers 1 − 2·9/256 = 93.0 %: one outlier each side is ignored.
        let e = estimate(&[-50.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 900.0]).unwrap();
        assert_eq!((e.median, e.lo, e.hi), (3.5, 1.0, 6.0));
        assert!((e.coverage - (1.0 - 18.0 / 256.0)).abs() < 1e-12);
        // Four: the whole range, worth 87.5 %.
        let e = estimate(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!((e.median, e.lo, e.hi, e.coverage), (2.5, 1.0, 4.0, 0.875));
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn cells_say_when_the_interval_includes_zero() {
        let e = |xs: &[f64]| estimate(xs).unwrap().to_json();
        assert_eq!(cell(&e(&[9.0, 10.0, 11.0, 12.0]), 1), "10.5 ±1.5");
        assert_eq!(cell(&e(&[-3.0, -1.0, 0.5, 1.0]), 1), "≈0 ±2.8");
        assert_eq!(cell(&e(&[2.0]), 1), "2.0");
        assert_eq!(cell(&Value::Null, 1), "—");
        assert_eq!(cell(&json!(-2.25), 1), "-2.2");
        assert_eq!((coverage(1), coverage(4), coverage(6)), (0.0, 0.875, 62.0 / 64.0));
    }
}
