//! [`HostKernel`]: the running kernel and this machine's files.

use super::{
    btf, elf, kallsyms, ElfError, ElfSymbol, FormatFile, KernelFunction, KernelInfo, SyscallTable, Tracefs,
    TracefsError,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// This machine: tracefs, `/sys/kernel/btf/vmlinux`, `/proc/kallsyms` (read
/// once per process, when a kprobe is first bound), ELF files and the library
/// search path, the UAPI system call header.
#[derive(Debug, Clone)]
pub struct HostKernel {
    tracefs: Tracefs,
}

impl HostKernel {
    /// The running kernel, with its tracefs found where it is mounted.
    pub fn open() -> Result<HostKernel, TracefsError> {
        Ok(HostKernel { tracefs: Tracefs::open()? })
    }

    /// The running kernel, but tracepoint formats from the tracefs-shaped
    /// directory `root` (a bundle's formats; a tree of another kernel).
    pub fn with_tracefs(root: impl Into<PathBuf>) -> HostKernel {
        HostKernel { tracefs: Tracefs::at(root) }
    }

    /// The tracefs tree formats are read from.
    pub fn tracefs(&self) -> &Tracefs {
        &self.tracefs
    }
}

impl KernelInfo for HostKernel {
    fn tracepoints(&self) -> Result<Vec<(String, String)>, TracefsError> {
        self.tracefs.events()
    }

    fn tracepoint_format(&self, category: &str, name: &str) -> Result<Option<FormatFile>, TracefsError> {
        self.tracefs.format(category, name)
    }

    fn btf_functions(&self) -> Option<&HashMap<String, KernelFunction>> {
        btf::btf_functions()
    }

    fn has_btf(&self) -> bool {
        btf::has_kernel_btf()
    }

    fn btf(&self) -> Option<&crate::btf::Btf> {
        btf::btf_problem().is_none().then(btf::kernel_btf).flatten()
    }

    fn btf_problem(&self) -> Option<String> {
        btf::btf_problem()
    }

    fn kallsyms_has_function(&self, function: &str) -> Option<bool> {
        kallsyms::host_text_symbol_names().map(|names| names.contains(function))
    }

    fn resolve_binary(&self, name: &str) -> Result<PathBuf, ElfError> {
        elf::resolve_binary(name)
    }

    fn find_symbol(&self, path: &Path, symbol: &str) -> Result<ElfSymbol, ElfError> {
        elf::find_symbol(path, symbol)
    }

    fn find_symbols(&self, path: &Path, symbols: &[&str]) -> Vec<Result<ElfSymbol, ElfError>> {
        elf::find_symbols(path, symbols)
    }

    fn data_symbols(&self, path: &Path, names: &[&str]) -> Result<Vec<Option<elf::DataSymbol>>, ElfError> {
        elf::data_symbols(path, names)
    }

    fn usdt_sites(&self, path: &Path) -> Result<Vec<super::usdt::UsdtSite>, ElfError> {
        super::usdt::usdt_sites(path)
    }

    fn syscalls(&self) -> &SyscallTable {
        SyscallTable::host()
    }

    fn arch(&self) -> &str {
        std::env::consts::ARCH
    }
}
