//! ebq's runtime: compile, load, attach, and drive a query: the only crate
//! that talks to the kernel, and the only one on libbpf.
//!
//! It takes what `ebq-front` prepared ([`PreparedQuery`](ebq_front::PreparedQuery):
//! the physical plan and its BPF C) to a [`RunningQuery`], and hands the
//! kernel's maps and ring buffers to `ebq-exec`'s operators, whose
//! [`Output`] batches go to its sinks.
//!
//! A [`RunningQuery`] owns the object, its links and its ring buffer;
//! dropping it detaches everything (nothing is pinned unless asked: [`pin`]).
//! The query logic (`single`, `stream_join`) reaches a loaded object only
//! through the `KernelObject` trait (`object`): maps by role, the window and
//! sequence counters, accounting, the tracked-pid set, the ring buffer,
//! detaching, per-program statistics. `libbpf_object` implements it over
//! libbpf; `fake_object` over plain values, for the unit tests of both, without root.
//! [`bundle`] keeps a compiled query to run on another machine.
#![deny(missing_docs)]

mod attach;
pub mod btf;
pub mod bundle;
mod compile;
pub mod env;
#[cfg(test)]
mod fake_object;
pub mod footprint;
mod libbpf_object;
mod load;
mod maps;
mod object;
pub mod object_cache;
mod pair_age;
pub mod pin;
mod running;
mod selfstats;
mod single;
mod stacks;
pub mod startup_trace;
mod stream_join;
pub mod teardown;
mod time_order;

/// A kernel fold's map read whole (`RunningQuery::fold_map`): each key with
/// its value, one per CPU for a per-CPU map.
pub type FoldEntries = Vec<(Vec<u8>, Vec<Vec<u8>>)>;

pub use compile::{compile, scratch_dir};
pub use load::Scope;
pub use pair_age::DEFAULT_MAX_PAIR_AGE;
pub use pin::{PinOptions, Pins};
pub use running::RunningQuery;
pub use selfstats::{enable_bpf_stats, process_cpu_ns, ProgramStats, StatsGuard};
// What a running query hands out, defined by the executor its sinks share.
pub use ebq_exec::scope_note::{scope_note, MOSTLY};
pub use ebq_exec::{
    arrow_type, hist_cell, monotonic_ns, schema, Output, QueryStats, Value, WindowBounds, DEFAULT_MAX_SORTED_ROWS,
};

use single::SingleQuery;

/// Sleeps up to `d`, returning early when a signal arrives: `nanosleep` is
/// never restarted after a handler (`std::thread::sleep` is), so a query
/// loop waiting for its next tick sees Ctrl-C or its `-c` command's SIGCHLD
/// at once rather than up to a tick later.
pub(crate) fn nap(d: std::time::Duration) {
    let ts = libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long };
    // SAFETY: ts is a valid timespec; a NULL remainder is allowed.
    unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
}
