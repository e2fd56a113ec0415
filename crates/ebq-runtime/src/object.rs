//! The seam between a query's driver and the kernel: one loaded, attached
//! BPF object as [`SingleQuery`](super::SingleQuery) uses it.
//!
//! Every kernel access of a running query goes through [`KernelObject`]:
//! the group and sketch maps (as [`PerCpuMap`]s), the window and sequence
//! counters in `.bss`, the per-CPU accounting, the tracked-pid set, the ring
//! buffer, detaching, the RCU grace period after a flip or a detach, and the
//! per-program statistics. [`LibbpfObject`](super::libbpf_object::LibbpfObject)
//! implements it over libbpf; the unit tests implement it over plain
//! values, so the window, drain, finish, stats and row logic runs without
//! root or a kernel.

use super::stacks::Stacks;
use super::ProgramStats;
use ebq_exec::PerCpuMap;
use ebq_front::codegen::MapRole;
use ebq_front::error::Result;
use std::path::Path;
use std::time::Duration;

/// Where a row program's ring-buffer records go, one call per record (given
/// when the object is set up, as libbpf's ring buffer takes its callback).
pub(crate) type RecordSink = Box<dyn FnMut(&[u8])>;

/// A loaded, attached BPF object of one kernel program. Dropping it detaches
/// everything.
pub(crate) trait KernelObject {
    /// The group map ([`MapRole::Groups`]), when the program aggregates.
    fn groups(&self) -> Option<&dyn PerCpuMap>;

    /// True when the loaded group map is a one-slot per-CPU array (the
    /// loaded map's own type, not the plan's: a bundle compiled before
    /// keyless queries used an array slot still holds a hash).
    fn groups_is_single_slot(&self) -> bool;

    /// The quantile sketches ([`MapRole::Sketch`]), when the query has QUANTILE/Pxx.
    fn sketch(&self) -> Option<&dyn PerCpuMap>;

    /// The names of the group key's identities ([`MapRole::Names`]), when
    /// the plan groups by them (`plan::late_names`).
    fn names(&self) -> Option<&dyn PerCpuMap> {
        None
    }

    /// Call stacks, when the query reads kstack/ustack.
    fn stacks(&self) -> Option<&Stacks>;
    /// A kernel fold's map by its C name (`MapRole::Fold`): every key with
    /// its value, one per CPU for a per-CPU map.
    fn fold_map(&self, name: &str) -> Result<super::FoldEntries> {
        Err(ebq_front::error::Error::Io {
            what: format!("read fold map {name}"),
            source: std::io::Error::other("this object has no kernel fold"),
        })
    }

    /// Writes the window number time-window programs put in their keys (`ebq_window`).
    fn set_window(&self, window: u64) -> Result<()>;

    /// The count of matching events count-window programs have numbered (`ebq_seq`).
    fn sequence(&self) -> Result<u64>;

    /// `struct ebq_stats` on each CPU ([`MapRole::Stats`]), as bytes.
    fn stats_per_cpu(&self) -> Result<Vec<Vec<u8>>>;

    /// Adds a process to the tracked set ([`MapRole::TrackedPids`]).
    fn track_pid(&self, tgid: u32) -> Result<()>;

    /// Waits up to `max_wait` for ring-buffer records, then hands every
    /// record available to the sink. A signal ending the wait is not an error.
    fn poll_ring(&mut self, max_wait: Duration) -> Result<()>;

    /// Hands every record in the ring buffer to the sink, without waiting.
    fn consume_ring(&mut self) -> Result<()>;

    /// Detaches every program that writes results or accounting: no event
    /// runs them after this returns. The `-c` process tracking (fork and exit
    /// followers, which only keep the pid set) may stay attached until the
    /// object is dropped: closing their perf events is the slow part of a
    /// teardown (~80 ms of RCU grace periods each), and the final read does
    /// not wait for it.
    fn detach(&mut self);

    /// Waits until every program run that started before this call has
    /// finished (after a window write or a detach).
    fn wait_for_inflight_programs(&self);

    /// Pins the map with `role` at `path`; false when the object has none.
    fn pin(&mut self, role: MapRole, path: &Path) -> Result<bool>;

    /// Run count and time of each program (zero unless BPF statistics are
    /// on) and the runs the kernel skipped (`recursion_misses`).
    fn program_stats(&self) -> Vec<ProgramStats>;

    /// Periodic timers (`interval:`), once detached: the whole periods their
    /// CPU clocks ran, each a firing owed to the query's program
    /// (`attach::TimerClock`). `None` while running, and without such timers.
    fn timer_periods(&self) -> Option<u64> {
        None
    }

    /// JOIN: the pairing maps ([`MapRole::Pending`]), one per pairing in the
    /// contract's order (a top-level union's branches may each pair); empty
    /// when the program pairs nothing.
    fn pending(&self) -> Vec<&dyn PairMap>;
}

/// A JOIN's pairing map (`ebq_pending`, a plain hash) as user space sweeps
/// and counts it.
pub(crate) trait PairMap {
    /// Every key present now.
    fn pair_keys(&self) -> Vec<Vec<u8>>;
    /// `key`'s value, or `None` when the pair closed meanwhile.
    fn pair(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Removes `key` and returns what it held, atomically (an end closing the
    /// pair and a start reopening it cannot slip in between).
    fn take_pair(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Puts `value` back under `key` unless a new start took the key meanwhile.
    fn restore_pair(&self, key: &[u8], value: &[u8]) -> Result<()>;
}
