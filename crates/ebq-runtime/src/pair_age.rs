//! Evicting JOIN orphans: pairs whose end never comes.
//!
//! A JOIN … ON start stays in `ebq_pending` until its end event closes it. Some
//! ends never come: `exit_group` and `exit` do not return (a `raw_syscalls`
//! join by thread leaves one entry per exiting thread), an end event can fail
//! the end program's scope or be missed under load. Left alone they fill the
//! map (`--max-pending`) and every later start is lost (`pending_full`). So
//! user space sweeps the map every quarter of the age bound (at most each
//! second) and deletes the entries opened longer than `--max-pair-age` ago,
//! counting them (`evicted`). The age is the start's `bpf_ktime_get_ns()`,
//! kept in the entry ([`ebq_front::plan::OPENED`]).

use super::monotonic_ns;
use super::object::PairMap;
use ebq_front::error::Result;
use ebq_front::plan::StructLayout;
use std::time::{Duration, Instant};

/// The default `--max-pair-age`.
pub const DEFAULT_MAX_PAIR_AGE: Duration = Duration::from_secs(60);

/// When a running JOIN's pairing map is swept next, and what its sweeps evicted.
pub(super) struct PairAges {
    /// Byte offset of the opening time in an entry's value.
    opened_at: usize,
    max_age: Duration,
    next_sweep: Instant,
    evicted: u64,
}

impl PairAges {
    /// For a pairing map whose values are laid out as `stash`.
    pub(super) fn new(stash: &StructLayout) -> PairAges {
        let opened = stash.fields.iter().find(|f| f.name == ebq_front::plan::OPENED).expect("every stash has OPENED");
        let mut ages = PairAges {
            opened_at: opened.offset as usize,
            max_age: DEFAULT_MAX_PAIR_AGE,
            next_sweep: Instant::now(),
            evicted: 0,
        };
        ages.set_max_age(DEFAULT_MAX_PAIR_AGE);
        ages
    }

    /// Entries older than `age` are evicted from now on.
    pub(super) fn set_max_age(&mut self, age: Duration) {
        self.max_age = age;
        self.next_sweep = Instant::now() + Self::period(age);
    }

    /// How often the map is swept: often enough that an orphan goes within
    /// 1.25 × the bound, rarely enough to cost nothing (a sweep reads every entry).
    fn period(age: Duration) -> Duration {
        (age / 4).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }

    /// Pairs evicted so far.
    pub(super) fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Sweeps `map` when a sweep is due.
    pub(super) fn sweep_if_due(&mut self, map: &dyn PairMap) -> Result<()> {
        if Instant::now() < self.next_sweep {
            return Ok(());
        }
        self.next_sweep = Instant::now() + Self::period(self.max_age);
        let now = monotonic_ns();
        let max_age = self.max_age.as_nanos() as u64;
        let old = |value: &[u8]| {
            let opened = value
                .get(self.opened_at..self.opened_at + 8)
                .map_or(u64::MAX, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
            now.saturating_sub(opened) >= max_age
        };
        for key in map.pair_keys() {
            let Some(value) = map.pair(&key)? else {
                continue; // closed meanwhile
            };
            if !old(&value) {
                continue;
            }
            // The end may close this pair and a new start reopen the key between
            // the lookup and here: take the entry atomically and put a young one back.
            match map.take_pair(&key)? {
                Some(taken) if old(&taken) => self.evicted += 1,
                Some(young) => map.restore_pair(&key, &young)?,
                None => {}
            }
        }
        Ok(())
    }
}
