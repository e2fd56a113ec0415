//! `zipf`: heavy hitters for the APPROX_TOP_K tests. `--calls` pread64 calls
//! of one byte on /dev/zero whose offset is key · 4096, the key drawn from
//! a Zipf distribution (exponent 1.3) over `--keys` ranks with a fixed
//! `--seed` (SplitMix64, inverse CDF), so the run is the same every time.
//! With `--sized` each call reads [`sized`] bytes, a function of its key, so
//! the keys heaviest in bytes are not the ones heaviest in calls (the
//! weighted `APPROX_TOP_K(pos, k, count)` test).
//! The report is the workload's own tally: every key issued with its calls
//! and bytes, heaviest in calls first (ties by key).

use super::{close_fd, emit_report, get_comm, os_err, set_comm, wait_for_file, Error};
use serde_json::json;
use std::collections::HashMap;

/// The Zipf exponent: rank r is drawn with probability ∝ r^−1.3.
const EXPONENT: f64 = 1.3;
/// Bytes between two keys' offsets.
const STRIDE: u64 = 4096;

/// `zipf --calls C [--keys N] [--seed S] [--sized] [--comm NAME] [--report FILE] [--wait-file PATH]`.
#[derive(Debug, PartialEq, clap::Args)]
pub(crate) struct ZipfCfg {
    /// N: the ranks keys are drawn from.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    keys: u64,
    /// C: the pread64 calls.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    calls: u64,
    /// S: the seed of the draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Each call reads 1 to 16 bytes by its key, not 1.
    #[arg(long)]
    sized: bool,
    #[arg(long, value_parser = crate::comm_arg)]
    comm: Option<String>,
    #[arg(long)]
    report: Option<String>,
    #[arg(long)]
    wait_file: Option<String>,
}

/// Bytes a `--sized` call at `key` reads: 1 + (13 · key/4096) mod 16, so 1
/// to 16 bytes spread over the heavy ranks (rank 2 reads 14 bytes, rank 1
/// one): over 400,000 calls of seed 7 the top 10 in bytes and in calls
/// share 8 keys, and the 10th and 11th in bytes are ~0.5 % of all bytes apart.
pub(crate) fn sized(key: u64) -> u64 {
    1 + (13 * (key / STRIDE)) % 16
}

/// SplitMix64: a small, fixed pseudo-random sequence.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The Zipf CDF over ranks 1..=n: cdf[i] = P(rank <= i + 1).
fn cdf(n: u64) -> Vec<f64> {
    let mut acc = 0.0;
    let mut c: Vec<f64> = (1..=n)
        .map(|r| {
            acc += (r as f64).powf(-EXPONENT);
            acc
        })
        .collect();
    for x in &mut c {
        *x /= acc;
    }
    c
}

pub(crate) fn run_zipf(cfg: &ZipfCfg) -> Result<(), Error> {
    if let Some(c) = &cfg.comm {
        set_comm(c)?;
    }
    let cdf = cdf(cfg.keys);
    let mut rng = SplitMix(cfg.seed);
    let mut draw = || {
        let u = rng.unit();
        cdf.partition_point(|&p| p <= u).min(cdf.len() - 1) as u64
    };
    let ranks: Vec<u64> = (0..cfg.calls).map(|_| draw()).collect();
    // SAFETY: a NUL-terminated path; the fd is closed below.
    let fd = unsafe { libc::open(c"/dev/zero".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(os_err("open /dev/zero"));
    }
    wait_for_file(cfg.wait_file.as_deref());
    // key → (calls, bytes)
    let mut tally: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut buf = [0u8; 16];
    for r in ranks {
        let key = r * STRIDE;
        let size = if cfg.sized { sized(key) } else { 1 };
        // SAFETY: buf has 16 >= size writable bytes; fd is open.
        if unsafe { libc::pread64(fd, buf.as_mut_ptr().cast(), size as usize, key as libc::off64_t) } != size as isize {
            close_fd(fd);
            return Err(os_err("pread64 /dev/zero"));
        }
        let t = tally.entry(key).or_default();
        *t = (t.0 + 1, t.1 + size);
    }
    close_fd(fd);
    let mut sorted: Vec<(u64, (u64, u64))> = tally.into_iter().collect();
    sorted.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
    let pairs: Vec<[u64; 3]> = sorted.iter().map(|&(k, (n, bytes))| [k, n, bytes]).collect();
    let json =
        json!({"pid": std::process::id(), "comm": get_comm(), "calls": cfg.calls, "keys": cfg.keys, "tally": pairs});
    emit_report(cfg.report.as_deref(), &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdf_ends_at_one_and_rank_one_is_heaviest() {
        let c = cdf(1000);
        assert!((c[999] - 1.0).abs() < 1e-12);
        assert!(c[0] > c[1] - c[0]);
        let mut a = SplitMix(7);
        let mut b = SplitMix(7);
        assert_eq!(a.next(), b.next());
    }

    #[test]
    fn sized_reads_take_1_to_16_bytes_by_key() {
        assert_eq!([0, 1, 2, 3].map(|r| sized(r * STRIDE)), [1, 14, 11, 8]);
        assert!((0..1000).all(|r| (1..=16).contains(&sized(r * STRIDE))));
        let parse = |s: &str| match crate::testing::parse_line(s).unwrap() {
            crate::Cmd::Zipf(c) => c,
            other => panic!("{other:?}"),
        };
        assert!(parse("zipf --calls 5 --sized").sized && !parse("zipf --calls 5").sized);
    }
}
