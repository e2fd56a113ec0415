//! The one seam between the pure stages and the machine they plan for.
//!
//! Bind and plan learn about the kernel and its binaries only through
//! [`KernelInfo`]: tracepoint formats, BTF functions, kernel text symbols,
//! uprobe targets, USDT probe sites, system call numbers, the instruction set and
//! whether CO-RE programs can be built. [`HostKernel`] reads this machine (tracefs, `/sys/kernel/btf`,
//! `/proc/kallsyms`, ELF files, UAPI headers); [`FixtureKernel`] answers from
//! checked-in files, so every stage before `runtime` runs in tests with the
//! host hidden. The runtime still reads the host directly (it loads programs
//! into this kernel), through the free functions of these modules.
//!
//! Answers are raw data (a format file's text, a symbol's offset); what to
//! make of them (parsing, globs, suggestions, error messages) lives in
//! the catalog and bind, written once for both kernels. This module is the
//! lowest stage but `btf`: it imports nothing else of the front.

pub mod btf;
pub mod cgroups;
pub mod elf;
mod fixture;
mod host_kernel;
pub mod kallsyms;
pub mod mountinfo;
pub mod syscalls;
mod tracefs;
pub mod usdt;

pub use btf::KernelFunction;
pub use elf::{ElfError, ElfSymbol};
pub use fixture::FixtureKernel;
pub use host_kernel::HostKernel;
pub use syscalls::SyscallTable;
pub use tracefs::{Tracefs, TracefsError};

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A tracefs `format` file: where it was read (for error messages) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatFile {
    /// The file's path, as error messages show it.
    pub path: String,
    /// Its contents.
    pub text: String,
}

/// What the pure stages may know about a kernel and the binaries on its host.
///
/// One method per kind of fact, answered by both kernels.
pub trait KernelInfo: std::fmt::Debug + Send + Sync {
    /// All tracepoint events `(category, name)` that have a format file, in
    /// any order; ftrace's own events are left out.
    fn tracepoints(&self) -> Result<Vec<(String, String)>, TracefsError>;

    /// The format file of `category:name` (each a single, safe path
    /// component), or `None` when the kernel has no such event.
    fn tracepoint_format(&self, category: &str, name: &str) -> Result<Option<FormatFile>, TracefsError>;

    /// Every function in the kernel's BTF, or `None` when it has no BTF
    /// (no fentry/fexit then).
    fn btf_functions(&self) -> Option<&HashMap<String, KernelFunction>>;

    /// True when the kernel has BTF ([`KernelInfo::btf_functions`] is
    /// `Some`), answered without parsing it where a host can.
    fn has_btf(&self) -> bool {
        self.btf_functions().is_some()
    }

    /// The kernel's BTF, parsed (raw tracepoint arguments and the structs they
    /// point to: `rq.q.disk.disk_name`), or `None` when it has none or CO-RE
    /// programs cannot be built here ([`KernelInfo::btf_problem`]).
    fn btf(&self) -> Option<&crate::btf::Btf>;

    /// Why programs reading kernel structs with CO-RE (file columns) cannot be
    /// compiled here, or `None` when they can.
    fn btf_problem(&self) -> Option<String>;

    /// Is `function` a text symbol of the kernel (what a kprobe attaches to)?
    /// `None` when the symbol list cannot be read.
    fn kallsyms_has_function(&self, function: &str) -> Option<bool>;

    /// The file a uprobe's binary name means: a path as is, a bare library
    /// name searched in the library directories.
    fn resolve_binary(&self, name: &str) -> Result<PathBuf, ElfError>;

    /// Function `symbol` of binary `path` (as [`KernelInfo::resolve_binary`]
    /// gave it) and the file offset a uprobe attaches at.
    fn find_symbol(&self, path: &Path, symbol: &str) -> Result<ElfSymbol, ElfError>;

    /// [`KernelInfo::find_symbol`] for each of `symbols`, in their order. A
    /// host reads the binary once for all of them (a 41 MB MPI library took
    /// 0.08–0.16 s a lookup).
    fn find_symbols(&self, path: &Path, symbols: &[&str]) -> Vec<Result<ElfSymbol, ElfError>> {
        symbols.iter().map(|s| self.find_symbol(path, s)).collect()
    }

    /// The data objects `names` of binary `path` (as
    /// [`KernelInfo::resolve_binary`] gave it), `None` for each it does not
    /// define. Hosts without binaries (fixtures) have none.
    fn data_symbols(&self, path: &Path, names: &[&str]) -> Result<Vec<Option<elf::DataSymbol>>, ElfError> {
        let _ = path;
        Ok(vec![None; names.len()])
    }

    /// The USDT probe sites of binary `path` (as [`KernelInfo::resolve_binary`]
    /// gave it), from its `.note.stapsdt` notes; empty when it has none.
    fn usdt_sites(&self, path: &Path) -> Result<Vec<usdt::UsdtSite>, ElfError>;

    /// System call numbers and names.
    fn syscalls(&self) -> &SyscallTable;

    /// The machine's instruction set, as Rust names it (`x86_64`, `aarch64`):
    /// which registers carry system call and function arguments depends on it.
    fn arch(&self) -> &str;
}

/// The instruction set whose argument registers bind and plan know.
pub const X86_64: &str = "x86_64";

/// This machine's host name (`/proc/sys/kernel/hostname`, as uname reports
/// it; empty when unreadable), for the resource attributes of exported metrics.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|s| s.trim().to_string()).unwrap_or_default()
}
