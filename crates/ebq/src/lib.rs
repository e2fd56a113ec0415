//! ebq: streaming SQL over Linux kernel events, compiled to eBPF.
//!
//! The pipeline is the architecture, one crate per part, each depending only
//! on those before it; this crate re-exports them under one name:
//!
//! ```text
//! ebq-front    text ─parse─▶ Query ─bind(catalog)─▶ LogicalPlan ─plan─▶ PhysicalPlan ─codegen─▶ BPF C
//! ebq-runtime  ─clang, libbpf─▶ running query (the only crate that touches the kernel)
//! ebq-exec     maps and ring buffers ─decode, windows, joins─▶ Output batches ─▶ sink, export
//! ```
//!
//! Everything in `ebq-front` and `ebq-exec` is pure: no syscalls, testable
//! without root. What the front knows of the kernel comes through one seam,
//! [`host::KernelInfo`]: the running kernel, or a fixture in tests. The
//! runtime reaches a loaded BPF object only through one small trait
//! (`KernelObject`: maps, counters, accounting, ring buffer, detach), so its
//! window and row logic is unit-tested over a fake.
//!
//! ```no_run
//! let engine = ebq::Engine::new()?;
//! let prepared = engine.prepare("SELECT comm, COUNT(*) FROM raw_syscalls.sys_enter GROUP BY comm")?;
//! let running = ebq::RunningQuery::start(&prepared, ebq::Scope::All)?; // detaches when dropped
//! # drop(running);
//! # Ok::<(), ebq::Error>(())
//! ```
#![deny(missing_docs)]

pub use ebq_exec as exec;
pub use ebq_exec::{export, sink};
pub use ebq_front::{bind, btf, catalog, codegen, error, hist, hll, host, parse, plan, topk, types};
pub use ebq_runtime as runtime;
pub use ebq_runtime::bundle;

pub use ebq_front::{Engine, Error, PreparedQuery, Result};
pub use ebq_runtime::{Output, QueryStats, RunningQuery, Scope, WindowBounds};
