//! ebq's executor: the user-space half of a query, pure (no libbpf, no syscalls).
//!
//! What the kernel hands over — per-CPU map values and ring-buffer records,
//! as bytes — becomes typed values (`decode`), then windows: groups merged
//! across CPUs and panes (`read_groups`, `group_rows`, `window`), rows
//! of two streams assigned to panes and joined per window (`join_panes`,
//! `hash_join`, `join_groups`); then the operators the kernel cannot run
//! (HAVING, output expressions, ORDER BY, LIMIT: `user`, `sorted`) and
//! Arrow batches (`decode::to_batch`, `row_columns`, `hist_values`).
//!
//! `ebq-runtime` drives these from the kernel's maps and ring buffers; the
//! only kernel object the executor sees is a map behind the [`PerCpuMap`]
//! trait, so every operator here is unit-tested on hand-made inputs. Closed
//! windows go out as [`Output`] batches to a [`sink`], or as metrics to an
//! [`export`]er. Below it is `ebq-front` only: the plans it executes.
#![deny(missing_docs)]

pub mod argv;
pub mod clock;
pub mod decode;
pub mod escape;
pub mod export;
pub mod fixture;
pub mod group_rows;
pub mod hash_join;
pub mod hist_values;
pub mod join_groups;
pub mod join_panes;
pub mod late_names;
pub mod output;
pub mod percpu_map;
pub mod read_groups;
pub mod row_columns;
pub mod scope_note;
mod single_slot;
pub mod sink;
pub mod sorted;
pub mod user;
pub mod window;

#[cfg(test)]
mod tests;

pub use clock::monotonic_ns;
pub use decode::{arrow_type, schema, Value};
pub use hist_values::hist_cell;
pub use output::{Output, QueryStats};
pub use percpu_map::PerCpuMap;
pub use sorted::DEFAULT_MAX_SORTED_ROWS;
pub use window::WindowBounds;
