//! ebq: streaming SQL over Linux kernel events, compiled to eBPF.
//!
//! The pipeline is the architecture, one module per stage:
//!
//! ```text
//! text ─parse─▶ Query ─bind(catalog)─▶ LogicalPlan ─plan─▶ PhysicalPlan (kernel + user part)
//!      ─codegen─▶ BPF C ─runtime(clang, libbpf)─▶ running query ─▶ windows of RecordBatches ─▶ sink
//! ```
//!
//! Everything before [`runtime`] is pure: no syscalls, testable without root.
//! [`runtime`] is the only module that touches the kernel, and a running
//! query reaches its loaded BPF object only through one small trait
//! (`runtime`'s `KernelObject`: maps, counters, accounting, ring buffer,
//! detach), so its window and row logic is unit-tested over a fake; the
//! user-space operators it drives (decoding, windows, joins, HAVING/ORDER
//! BY/LIMIT) live in [`exec`], pure as well.
//! What bind and plan know of the kernel comes through one seam,
//! [`host::KernelInfo`]: the running kernel, or a fixture in tests.
#![deny(missing_docs)]

pub mod bind;
pub mod btf;
pub mod bundle;
pub mod catalog;
pub mod codegen;
mod engine;
pub mod error;
pub mod exec;
pub mod export;
pub mod hist;
pub mod hll;
pub mod host;
pub mod parse;
pub mod plan;
pub mod runtime;
pub mod sink;
pub mod types;

pub use engine::{Engine, PreparedQuery};
pub use error::{Error, Result};
pub use runtime::{Output, QueryStats, RunningQuery, Scope, WindowBounds};
