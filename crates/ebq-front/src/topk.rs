//! `APPROX_TOP_K(x, k [, w])`: heavy hitters in bounded memory. A Count-Min sketch
//! and a small table of candidate keys kept inline in the group's value (one
//! per-CPU copy), and their Rust mirror (the update codegen emits as C, the
//! merge and the estimates user space computes).
//!
//! Why: `GROUP BY x` keeps one map entry per distinct `x`, bounded by
//! `--max-groups`; past it groups are lost. The sketch has a size fixed at
//! plan time whatever the number of keys: [`ROWS`] × [`WIDTH`] 64-bit
//! counters (row `r` adds each event, or its weight `w`, to the column its
//! hash picks) plus
//! [`slots`]`(k)` candidate slots (key, the CPU's estimate when it was last
//! seen). A key whose estimate beats the lower of its two slots' takes it,
//! so keys heavier than their neighbours stay; user space estimates every
//! candidate from the merged counters and reports the `k` largest.
//!
//! The bound (Cormode & Muthukrishnan 2005): with N events counted, each
//! estimate is at least the true count and exceeds it by at most ε·N,
//! ε = e / [`WIDTH`], with probability at least 1 − δ, δ = e^−[`ROWS`]
//! ([`EPSILON`], [`DELTA`]). Weighted, the same holds in the weight's units
//! with W, the sum of the weights, for N (the proof only needs the
//! increments to be non-negative, hence an unsigned weight).
//!
//! N (or W) is not kept apart: every event adds its weight to exactly one
//! counter of each row, so the sum of any row is W, exactly, for the one
//! CPU's sketch and for any merge of sketches ([`Summary::mass`]). That
//! costs the kernel nothing more than the counters it already updates.
//!
//! Merge: counters add cell by cell and candidates unite, across CPUs,
//! panes of a window, windows and nodes alike (the sketch is linear: the sum
//! of two sketches is the sketch of both streams); the bound holds for the
//! sum with N (or W) the total.

use std::collections::BTreeSet;

/// Count-Min rows (d): δ = e^−d.
pub const ROWS: usize = 4;
/// Counters per row (w, a power of two): ε = e / w.
pub const WIDTH: usize = 512;
/// Counters in all: the first words of the sketch.
pub const COUNTERS: usize = ROWS * WIDTH;
/// The largest `k`: the sketch's value must stay under the kernel's 32 KiB per-CPU value limit.
pub const MAX_K: u64 = 32;
/// ε: each estimate exceeds the truth by at most ε·N (with probability ≥ 1 − δ).
pub const EPSILON: f64 = std::f64::consts::E / WIDTH as f64;
/// δ = e^−[`ROWS`]: the chance one estimate exceeds its bound.
pub const DELTA: f64 = 0.018_315_638_888_734_18;

/// Candidate slots for `k`: 16 per reported key (at least 64), a power of two.
pub fn slots(k: u16) -> usize {
    (16 * usize::from(k)).max(64).next_power_of_two()
}

/// 64-bit words of the sketch for `k`: the counters, then (key, estimate) per slot.
pub fn words(k: u16) -> usize {
    COUNTERS + 2 * slots(k)
}

/// The stated bound ε·N for `n` events (or ε·W for a sum of weights `n`), rounded up.
pub fn error_bound(n: u64) -> u64 {
    (EPSILON * n as f64).ceil() as u64
}

/// Counter index of `x` in row `r`: double hashing over the 64-bit hash
/// (h1 + r·h2, h2 odd), as the C does.
pub fn counter(h: u64, r: usize) -> usize {
    let (h1, h2) = (h as u32, (h >> 32) as u32 | 1);
    r * WIDTH + (h1.wrapping_add((r as u32).wrapping_mul(h2)) as usize & (WIDTH - 1))
}

/// The two candidate slots of a hash (word offsets of their keys).
fn candidate_words(h: u64, k: u16) -> [usize; 2] {
    let mask = slots(k) as u64 - 1;
    [COUNTERS + 2 * ((h >> 40) & mask) as usize, COUNTERS + 2 * ((h >> 52) & mask) as usize]
}

/// Adds one event of `x` weighing `w` (1 unweighted) to a CPU's sketch `t`
/// ([`words`] long): what the generated C does per event.
pub fn add(t: &mut [u64], k: u16, x: u64, w: u64) {
    let h = crate::hll::hash(x);
    let mut est = u64::MAX;
    for r in 0..ROWS {
        let i = counter(h, r);
        t[i] = t[i].wrapping_add(w);
        est = est.min(t[i]);
    }
    let [a, b] = candidate_words(h, k);
    if t[a + 1] != 0 && t[a] == x {
        t[a + 1] = est;
        return;
    }
    if t[b + 1] != 0 && t[b] == x {
        t[b + 1] = est;
        return;
    }
    let low = if t[b + 1] < t[a + 1] { b } else { a };
    if est > t[low + 1] {
        t[low] = x;
        t[low + 1] = est;
    }
}

/// A sketch merged across CPUs (and panes, windows, nodes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// The Count-Min counters, summed cell by cell.
    pub counters: Vec<u64>,
    /// Every key some CPU held in a slot.
    pub candidates: BTreeSet<u64>,
}

/// One reported key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopRow {
    /// The key (its 64-bit two's complement bits).
    pub key: u64,
    /// Its Count-Min estimate: at least its true count (or weight).
    pub estimate: u64,
    /// ε·N (ε·W weighted): the estimate exceeds the truth by at most this (probability ≥ 1 − δ).
    pub error_bound: u64,
}

impl Summary {
    /// Adds one CPU's sketch (its raw value bytes, [`words`] native-endian u64s).
    pub fn add_bytes(&mut self, bytes: &[u8]) {
        let words: Vec<u64> =
            bytes.chunks_exact(8).map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes"))).collect();
        if words.len() < COUNTERS {
            return;
        }
        self.add_counters(&words[..COUNTERS]);
        for slot in words[COUNTERS..].chunks_exact(2) {
            if slot[1] != 0 {
                self.candidates.insert(slot[0]);
            }
        }
    }

    /// Merges `other` into this summary: counters add, candidates unite.
    pub fn merge(&mut self, other: &Summary) {
        self.add_counters(&other.counters);
        self.candidates.extend(&other.candidates);
    }

    fn add_counters(&mut self, counters: &[u64]) {
        if self.counters.len() < counters.len() {
            self.counters.resize(counters.len(), 0);
        }
        for (a, b) in self.counters.iter_mut().zip(counters) {
            *a = a.wrapping_add(*b);
        }
    }

    /// N, the events counted (W, the sum of their weights, when weighted):
    /// the sum of the first row, since each event adds to one counter per row.
    pub fn mass(&self) -> u64 {
        self.counters.iter().take(WIDTH).fold(0, |a, c| a.wrapping_add(*c))
    }

    /// The Count-Min estimate of `x`: the least of its counters.
    pub fn estimate(&self, x: u64) -> u64 {
        let h = crate::hll::hash(x);
        (0..ROWS).map(|r| self.counters.get(counter(h, r)).copied().unwrap_or(0)).min().unwrap_or(0)
    }

    /// The `k` candidates with the largest estimates (ties: the smaller key
    /// first), each with the bound for the sketch's [`Summary::mass`].
    pub fn top(&self, k: u16) -> Vec<TopRow> {
        let bound = error_bound(self.mass());
        let mut rows: Vec<TopRow> = self
            .candidates
            .iter()
            .map(|&key| TopRow { key, estimate: self.estimate(key), error_bound: bound })
            .filter(|r| r.estimate > 0)
            .collect();
        rows.sort_by(|a, b| b.estimate.cmp(&a.estimate).then(a.key.cmp(&b.key)));
        rows.truncate(usize::from(k));
        rows
    }
}

/// C helpers for queries with APPROX_TOP_K (after [`crate::hll::C_HELPERS`],
/// whose hash they share, and the histogram helpers' barrier).
pub fn c_helpers() -> String {
    format!(
        r#"/* APPROX_TOP_K: Count-Min {ROWS} x {WIDTH} counters, then (key, estimate) candidate slots (ebq's topk module is the Rust mirror). */
#define EBQ_TOPK_COUNTERS {COUNTERS}

/*
 * Offers key x with this CPU's estimate est to its two candidate slots
 * (picked by hash bits 40 and 52): a slot holding x takes the new estimate;
 * else x replaces the lower slot when its estimate is higher (0 = empty).
 */
static __always_inline void ebq_topk_offer(__u64 *t, __u64 x, __u64 est, __u64 h, __u32 mask)
{{
	__u32 a = EBQ_TOPK_COUNTERS + 2 * ((__u32)(h >> 40) & mask);
	__u32 b = EBQ_TOPK_COUNTERS + 2 * ((__u32)(h >> 52) & mask);

	ebq_barrier_var(a);
	ebq_barrier_var(b);
	if (a > EBQ_TOPK_COUNTERS + 2 * mask || b > EBQ_TOPK_COUNTERS + 2 * mask)
		return;
	if (t[a + 1] && t[a] == x) {{
		t[a + 1] = est;
		return;
	}}
	if (t[b + 1] && t[b] == x) {{
		t[b + 1] = est;
		return;
	}}
	if (t[b + 1] < t[a + 1])
		a = b;
	ebq_barrier_var(a);
	if (a > EBQ_TOPK_COUNTERS + 2 * mask)
		return;
	if (est > t[a + 1]) {{
		t[a] = x;
		t[a + 1] = est;
	}}
}}

"#
    )
}

/// The EXPLAIN text of the sketch for `k`: its memory and its bound, over
/// events, or over the sum W of `weight` (shown as written) when weighted.
pub fn explain(k: u16, weight: Option<&str>) -> String {
    let bound = match weight {
        Some(w) => format!(
            "estimate and bound in units of {w}: estimate - true <= e/{WIDTH} W = {:.2} % of W = SUM({w})",
            EPSILON * 100.0
        ),
        None => format!("estimate - true <= e/{WIDTH} N = {:.2} % of events", EPSILON * 100.0),
    };
    format!(
        "Count-Min {ROWS} x {WIDTH} counters + {} candidate slots inline ({} B per CPU, fixed whatever the number of keys; \
         {bound} with probability >= 1 - e^-{ROWS} = {:.1} %)",
        slots(k),
        words(k) * 8,
        (1.0 - DELTA) * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_stay_under_the_per_cpu_value_limit() {
        assert_eq!(slots(1), 64);
        assert_eq!(slots(10), 256);
        assert_eq!(words(10), 2048 + 512);
        assert!(words(MAX_K as u16) * 8 + 8 <= 32 << 10);
        assert!((DELTA - (-(ROWS as f64)).exp()).abs() < 1e-12);
    }

    /// Two CPUs' sketches merged find the heavy keys, and every estimate is
    /// at least the truth and within the bound.
    #[test]
    fn merged_sketches_find_the_heavy_keys_within_the_bound() {
        let (k, mut cpus) = (3u16, [vec![0u64; words(3)], vec![0u64; words(3)]]);
        let mut truth = std::collections::BTreeMap::<u64, u64>::new();
        let mut n = 0;
        for i in 0..40_000u64 {
            // Keys 7, 8, 9 are heavy; the rest are 2,000 light keys.
            let x = match i % 10 {
                0..=2 => 7,
                3 | 4 => 8,
                5 => 9,
                _ => 1000 + i % 2000,
            };
            add(&mut cpus[(i % 2) as usize], k, x, 1);
            *truth.entry(x).or_default() += 1;
            n += 1;
        }
        let mut s = Summary::default();
        for c in &cpus {
            let bytes: Vec<u8> = c.iter().flat_map(|w| w.to_ne_bytes()).collect();
            s.add_bytes(&bytes);
        }
        assert_eq!(s.mass(), n);
        let top = s.top(k);
        assert_eq!(top.iter().map(|r| r.key).collect::<Vec<_>>(), [7, 8, 9]);
        for r in &top {
            assert!(r.estimate >= truth[&r.key] && r.estimate - truth[&r.key] <= r.error_bound, "{r:?}");
        }
        let mut twice = s.clone();
        twice.merge(&s);
        assert_eq!(twice.estimate(7), 2 * s.estimate(7));
    }

    /// Weighted, the heaviest keys are those of the most weight, not of the
    /// most events; the mass is W, the sum of the weights, and every
    /// estimate is within ε·W of the true weight.
    #[test]
    fn weighted_sketches_find_the_heaviest_weights_within_the_bound() {
        let (k, mut cpus) = (2u16, [vec![0u64; words(2)], vec![0u64; words(2)]]);
        let mut truth = std::collections::BTreeMap::<u64, u64>::new();
        let mut w_total = 0;
        for i in 0..40_000u64 {
            // Key 7 is the most frequent (30 %) but weighs 1; keys 8 and 9
            // (10 % each) weigh 100 and 50; the rest, 3,000 keys of weight 4.
            let (x, w) = match i % 10 {
                0..=2 => (7, 1),
                3 => (8, 100),
                4 => (9, 50),
                _ => (1000 + i % 3000, 4),
            };
            add(&mut cpus[(i % 2) as usize], k, x, w);
            *truth.entry(x).or_default() += w;
            w_total += w;
        }
        let mut s = Summary::default();
        for c in &cpus {
            s.add_bytes(&c.iter().flat_map(|w| w.to_ne_bytes()).collect::<Vec<u8>>());
        }
        assert_eq!(s.mass(), w_total);
        let top = s.top(k);
        assert_eq!(top.iter().map(|r| r.key).collect::<Vec<_>>(), [8, 9]);
        for r in &top {
            assert_eq!(r.error_bound, error_bound(w_total));
            assert!(r.estimate >= truth[&r.key] && r.estimate - truth[&r.key] <= r.error_bound, "{r:?}");
        }
    }
}
