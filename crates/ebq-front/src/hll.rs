//! `APPROX_COUNT_DISTINCT(x)`: a HyperLogLog sketch kept in the kernel, and
//! its Rust mirror (the hash and register update codegen emits as C, and the
//! estimate user space computes from the merged registers).
//!
//! Why HyperLogLog: exact `COUNT(DISTINCT x)` makes `x` a hidden group key,
//! so its kernel state grows with the number of distinct values (one map
//! entry each, bounded by `--max-groups`). The sketch is [`REGISTERS`] one-byte
//! registers inline in the group's value, whatever the number of distinct
//! values, and merges across CPUs, panes and groups by taking the maximum of
//! each register. Its standard error is 1.04 / √[`REGISTERS`] ≈ 3.25 %.
//!
//! The hash is MurmurHash3's 64-bit finalizer: a bijection on 64-bit values,
//! so distinct arguments never collide in the hash itself; the estimate's only
//! error is HyperLogLog's.

/// log2 of the number of registers: the register index is the hash's top `P` bits.
pub const P: u32 = 10;
/// Registers per sketch (one byte each, inline in the group's map value).
pub const REGISTERS: usize = 1 << P;
/// The relative standard error of an estimate: 1.04 / √[`REGISTERS`].
pub const STANDARD_ERROR: f64 = 0.0325;

/// The 64-bit hash of an argument value (as its 64-bit two's complement bits).
pub fn hash(x: u64) -> u64 {
    let mut x = x;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// (register index, rank) of a hash: the index is the top [`P`] bits; the
/// rank is one plus the number of leading zeros in the other 64 − P bits.
pub fn index_and_rank(h: u64) -> (usize, u8) {
    let rest = h << P;
    let rank = if rest == 0 { 64 - P + 1 } else { rest.leading_zeros() + 1 };
    ((h >> (64 - P)) as usize, rank as u8)
}

/// Adds one value to `registers` (what the generated C does per event).
pub fn add(registers: &mut [u8], x: u64) {
    let (i, rank) = index_and_rank(hash(x));
    registers[i] = registers[i].max(rank);
}

/// Merges `other` into `into`: each register keeps the larger rank.
pub fn merge(into: &mut Vec<u8>, other: &[u8]) {
    if into.len() < other.len() {
        into.resize(other.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(other) {
        *a = (*a).max(*b);
    }
}

/// The distinct-count estimate of a sketch: HyperLogLog's harmonic mean,
/// with linear counting while it is below 2.5 × registers and some register
/// is empty (Flajolet et al. 2007). A 64-bit hash needs no large-range correction.
pub fn estimate(registers: &[u8]) -> u64 {
    if registers.is_empty() {
        return 0;
    }
    let m = registers.len() as f64;
    let alpha = 0.7213 / (1.0 + 1.079 / m);
    let sum: f64 = registers.iter().map(|&r| (-f64::from(r)).exp2()).sum();
    let raw = alpha * m * m / sum;
    let empty = registers.iter().filter(|&&r| r == 0).count();
    let e = if raw <= 2.5 * m && empty > 0 { m * (m / empty as f64).ln() } else { raw };
    e.round() as u64
}

/// The estimate for a set of values, computed as the kernel would (tests
/// compare the kernel's result with this over the values a workload issued).
pub fn estimate_of(values: impl IntoIterator<Item = u64>) -> u64 {
    let mut registers = vec![0u8; REGISTERS];
    for x in values {
        add(&mut registers, x);
    }
    estimate(&registers)
}

/// C helpers, emitted for queries with `APPROX_COUNT_DISTINCT` (after the
/// histogram helpers, whose `ebq_log2` gives the rank).
pub const C_HELPERS: &str = r#"/* APPROX_COUNT_DISTINCT: HyperLogLog with 1024 one-byte registers (ebq's hll module is the Rust mirror). */
#define EBQ_HLL_REGISTERS 1024

/* MurmurHash3's 64-bit finalizer: a bijection, so distinct values never collide in the hash. */
static __always_inline __u64 ebq_hll_hash(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_counts_leading_zeros_after_the_index() {
        assert_eq!(index_and_rank(u64::MAX), (REGISTERS - 1, 1));
        assert_eq!(index_and_rank(1 << 53), (0, 1));
        assert_eq!(index_and_rank(1), (0, 54));
        assert_eq!(index_and_rank(0), (0, 55));
    }

    #[test]
    fn small_sets_are_exact_and_large_ones_within_three_standard_errors() {
        assert_eq!(estimate_of([]), 0);
        assert_eq!(estimate_of([7, 7, 7]), 1);
        assert_eq!(estimate_of(0..10), 10);
        for n in [1_000u64, 10_000, 100_000, 1_000_000] {
            let e = estimate_of(0..n) as f64;
            let err = (e - n as f64).abs() / n as f64;
            assert!(err < 3.0 * STANDARD_ERROR, "n {n}: estimate {e}, error {err}");
        }
    }

    #[test]
    fn merging_equals_adding_everything_to_one_sketch() {
        let (mut a, mut b) = (vec![0u8; REGISTERS], vec![0u8; REGISTERS]);
        (0..5000).for_each(|x| add(&mut a, x));
        (2500..9000).for_each(|x| add(&mut b, x));
        merge(&mut a, &b);
        assert_eq!(estimate(&a), estimate_of(0..9000));
    }
}
