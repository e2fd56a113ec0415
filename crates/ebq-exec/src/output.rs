//! What a running query hands its sinks: batches of results, and the
//! accounting of the events behind them.

use crate::{Value, WindowBounds};
use arrow_array::RecordBatch;

/// A batch of results.
#[derive(Debug, Clone)]
pub struct Output {
    /// What the batch covers.
    pub window: WindowBounds,
    /// The rows.
    pub batch: RecordBatch,
    /// True when this is a running snapshot of an unfinished window (`--interval`).
    pub partial: bool,
    /// Per row of `batch`, in order, the values of the plan's
    /// `UserPlan::distributions` (exact histogram sums, whole quantile
    /// sketches) for exporters; empty when the plan has none.
    pub extras: Vec<Vec<Value>>,
}

/// Event accounting. For aggregates `matched = aggregated + dropped`; for rows
/// `matched = delivered + dropped` once the ring buffer is drained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Events in scope at the probe.
    pub seen: u64,
    /// Events the scope (`-p`, `-c`, `--cgroup`: the runtime's `Scope`) left out: they
    /// fired in another process, or in interrupt or kernel-thread context,
    /// and did not reach WHERE. Not a loss: `seen + out_of_scope` is what the
    /// query's program was run for. Counted by the query's own program(s); a
    /// JOIN's start program and an expanding event's driver do not count here
    /// (a JOIN's end event is not scoped). See [`scope_note`](crate::scope_note::scope_note).
    pub out_of_scope: u64,
    /// Events that passed WHERE.
    pub matched: u64,
    /// Rows received by user space (row queries).
    pub delivered: u64,
    /// Events lost: group map or ring buffer full.
    pub dropped: u64,
    /// Events the kernel offered the query's program but did not run it for
    /// (its `recursion_misses`): lost before any check, so they are counted
    /// whatever their process or WHERE. With no `-p`/`-c` scope,
    /// `seen + missed` is every event the kernel offered while attached; for a
    /// JOIN (the query program is the end event's) `seen + unmatched + missed`
    /// is. A missed JOIN end leaves its pair open: that pair is lost. A
    /// periodic timer (`interval:`) counts no misses in the kernel: once the
    /// query has finished, its skipped firings (periods passed less runs) are
    /// added here (`ebq_runtime`'s `TimerClock`).
    pub missed: u64,
    /// JOIN: start events the kernel did not run the start program for. Each
    /// is a pair never seen; its end event, if run, is counted `unmatched`.
    pub missed_starts: u64,
    /// JOIN, once the query has finished (0 before): pairs whose start was
    /// recorded and whose end never came while attached, left in the pairing
    /// map. Each is a pair lost: in flight when ebq detached, or its end event
    /// never ran, whether the kernel counted that in `missed` or dropped it
    /// without counting (README, "Accounting").
    pub open_pairs: u64,
    /// `-c`: fork and exit events the kernel did not run the process-tracking
    /// programs for. A missed fork of a traced process is a child not traced
    /// (an upper bound: the fork may have been another process's).
    pub missed_tracking: u64,
    /// JOIN: end events with no open pair (their start came before ebq
    /// attached, or did not pass the start-side WHERE).
    pub unmatched: u64,
    /// JOIN: start events lost because the pairing map was full (`--max-pending`);
    /// each is a pair that will never be seen.
    pub pending_full: u64,
    /// `-c`: children not traced because the process set was full (`--max-tracked`).
    pub untracked: u64,
    /// JOIN: open pairs a later start on the same key replaced before their
    /// end came. Block requests and threads reuse their keys, so a pair whose
    /// end the kernel skipped (counted in `missed` or, on this kernel, not
    /// counted at all: README "Accounting") is superseded by the next start
    /// rather than left open; a start that repeats (a requeued request issued
    /// again) is counted here too. Each is a pair never timed.
    pub superseded: u64,
    /// JOIN: open pairs evicted from the pairing map because their end did not
    /// come within `--max-pair-age` (e.g. `exit_group`, which never returns).
    pub evicted: u64,
    /// Times the query's main program ran (0 unless BPF statistics are on).
    pub bpf_run_cnt: u64,
    /// Nanoseconds spent in the query's main program (0 unless BPF statistics are on).
    pub bpf_run_time_ns: u64,
    /// CPU time of this process since the query started (all threads, user + system).
    pub user_cpu_ns: u64,
    /// Join of two streams: rows that arrived after their window had been
    /// joined (later than the grace period), left out of the results.
    pub late: u64,
    /// Strings read through a pointer that could not be read when their
    /// event fired (user memory: a page not resident at a system call's
    /// entry, a bad pointer, an `argv` array or entry; a kernel `char *`
    /// through BTF: NULL or stale): each is NULL in its row or group key,
    /// and the event is matched and delivered as any other. A JOIN that reads the start's string at its
    /// end event reads it after the call faulted the page in.
    pub unreadable_strings: u64,
    /// Chained JOIN: middle events that found no open pair on their key
    /// (their pair's start came before ebq attached, or was filtered):
    /// ignored, not losses, like ends without a start.
    pub middle_unmatched: u64,
}

impl QueryStats {
    /// Adds another program's event accounting to this one (the two streams
    /// of a user-space JOIN, the report's queries): every event count and the
    /// kernel's run counts summed. `user_cpu_ns` and `late` are not: the CPU
    /// time is the process's, and lateness the caller's to say.
    pub fn add_events(&mut self, s: &QueryStats) {
        let QueryStats {
            seen,
            out_of_scope,
            matched,
            delivered,
            dropped,
            missed,
            missed_starts,
            open_pairs,
            missed_tracking,
            unmatched,
            pending_full,
            untracked,
            superseded,
            evicted,
            bpf_run_cnt,
            bpf_run_time_ns,
            user_cpu_ns: _,
            late: _,
            unreadable_strings,
            middle_unmatched,
        } = *s;
        self.seen += seen;
        self.out_of_scope += out_of_scope;
        self.matched += matched;
        self.delivered += delivered;
        self.dropped += dropped;
        self.missed += missed;
        self.missed_starts += missed_starts;
        self.open_pairs += open_pairs;
        self.missed_tracking += missed_tracking;
        self.unmatched += unmatched;
        self.pending_full += pending_full;
        self.untracked += untracked;
        self.superseded += superseded;
        self.evicted += evicted;
        self.bpf_run_cnt += bpf_run_cnt;
        self.bpf_run_time_ns += bpf_run_time_ns;
        self.unreadable_strings += unreadable_strings;
        self.middle_unmatched += middle_unmatched;
    }
}
