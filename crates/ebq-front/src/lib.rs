//! ebq's pure front: query text to BPF C, with no syscall on the way.
//!
//! One module per stage, each importing only those before it:
//!
//! ```text
//! btf, host ─▶ parse ─▶ catalog ─▶ bind ─▶ plan ─▶ codegen ─▶ engine
//! text ─parse─▶ Query ─bind(catalog)─▶ LogicalPlan ─plan─▶ PhysicalPlan (kernel + user part) ─codegen─▶ BPF C
//! ```
//!
//! What the stages know of a kernel comes through one seam,
//! [`host::KernelInfo`]: the running kernel ([`host::HostKernel`], which reads
//! tracefs, BTF, kallsyms, ELF files and headers with plain file reads), or a
//! fixture in tests ([`host::FixtureKernel`]). [`Engine`] takes a query
//! through every stage; running the result is `ebq-runtime`'s, reading its
//! output `ebq-exec`'s. `error`, `types`, `hist`, `hll`, `topk` and `suggest` are
//! shared by all stages.
#![deny(missing_docs)]

pub mod bind;
pub mod btf;
pub mod catalog;
pub mod codegen;
pub mod engine;
pub mod error;
pub mod hist;
pub mod hll;
pub mod host;
pub mod parse;
pub mod plan;
pub mod suggest;
pub mod topk;
pub mod types;

pub use engine::{Engine, PreparedQuery};
pub use error::{Error, Result};
