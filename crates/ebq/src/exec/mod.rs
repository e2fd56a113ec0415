//! Exec: the user-space half of a query, pure (no libbpf, no syscalls).
//!
//! What the kernel hands over — per-CPU map values and ring-buffer records,
//! as bytes — becomes typed values (`decode`), then windows: groups merged
//! across CPUs and panes (`read_groups`, `group_rows`, `window`), rows
//! of two streams assigned to panes and joined per window (`join_panes`,
//! `hash_join`, `join_groups`); then the operators the kernel cannot run
//! (HAVING, output expressions, ORDER BY, LIMIT: `user`, `sorted`) and
//! Arrow batches (`decode::to_batch`, `row_columns`, `hist_values`).
//!
//! `runtime` drives these from the kernel's maps and ring buffers; the only
//! kernel object exec sees is a map behind the [`PerCpuMap`] trait, so every
//! operator here is unit-tested on hand-made inputs.

pub(crate) mod decode;
pub(crate) mod group_rows;
pub(crate) mod hash_join;
pub(crate) mod hist_values;
pub(crate) mod join_groups;
pub(crate) mod join_panes;
pub(crate) mod percpu_map;
pub(crate) mod read_groups;
pub(crate) mod row_columns;
mod single_slot;
pub(crate) mod sorted;
pub(crate) mod user;
pub(crate) mod window;

#[cfg(test)]
pub(crate) mod tests;

pub use decode::{arrow_type, schema, Value};
pub use hist_values::hist_cell;
pub use percpu_map::PerCpuMap;
pub use sorted::DEFAULT_MAX_SORTED_ROWS;
pub use window::WindowBounds;
