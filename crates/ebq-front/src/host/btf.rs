//! The running kernel's BTF: its functions (for fentry/fexit and kernel
//! function suggestions) and whether CO-RE programs can be compiled at all.

use crate::btf::{Btf, Kind};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Environment variable naming the kernel BTF file (default
/// [`DEFAULT_KERNEL_BTF`]); also how tests simulate a kernel without BTF.
pub const KERNEL_BTF_ENV: &str = "EBQ_KERNEL_BTF";

/// Where the running kernel publishes its BTF.
pub const DEFAULT_KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The kernel BTF file file columns are compiled against.
pub fn kernel_btf_path() -> PathBuf {
    std::env::var_os(KERNEL_BTF_ENV).map_or_else(|| PathBuf::from(DEFAULT_KERNEL_BTF), PathBuf::from)
}

/// Why programs that read kernel structs (file columns) cannot be compiled on
/// this machine, if they cannot: they need the running kernel's BTF.
pub fn btf_problem() -> Option<String> {
    let path = kernel_btf_path();
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() && m.len() > 0 => None,
        Ok(_) => Some(format!("{} is empty or not a file", path.display())),
        Err(e) => Some(format!(
            "file columns are read with CO-RE and need the kernel's BTF, but {} cannot be read ({e}); \
             kernels publish it when built with CONFIG_DEBUG_INFO_BTF",
            path.display()
        )),
    }
}

/// The running kernel's BTF ([`kernel_btf_path`]), parsed once per process;
/// `None` when it cannot be read or parsed. Binding raw tracepoint arguments
/// and file columns need it: about 5 MB parsed in tens of milliseconds and
/// ~8 MB held for the rest of the process, so only queries that name an
/// argument or a file column (or misspell a column) pay for it.
pub fn kernel_btf() -> Option<&'static Btf> {
    static OVERRIDDEN: OnceLock<Option<Btf>> = OnceLock::new();
    match std::env::var_os(KERNEL_BTF_ENV) {
        None => host_btf(),
        Some(path) => OVERRIDDEN.get_or_init(|| parse_file(std::path::Path::new(&path))).as_ref(),
    }
}

/// `/sys/kernel/btf/vmlinux` parsed, once per process: what both
/// [`kernel_btf`] (unless overridden) and [`btf_functions`] read, so a query
/// that needs both parses it once.
fn host_btf() -> Option<&'static Btf> {
    static HOST: OnceLock<Option<Btf>> = OnceLock::new();
    HOST.get_or_init(|| parse_file(std::path::Path::new(DEFAULT_KERNEL_BTF))).as_ref()
}

fn parse_file(path: &std::path::Path) -> Option<Btf> {
    Btf::parse(&std::fs::read(path).ok()?).ok()
}

/// True when the running kernel publishes its BTF (what tp_btf and fentry
/// programs attach against), known from the file alone: deciding how to
/// attach a system call must not cost a parse of the whole BTF.
pub fn has_kernel_btf() -> bool {
    std::fs::metadata(DEFAULT_KERNEL_BTF).is_ok_and(|m| m.is_file() && m.len() > 0)
}

/// A kernel function as BTF describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelFunction {
    /// Argument slots (8 bytes each) in fentry's context array.
    pub arg_slots: u32,
    /// False for `void` functions (fexit then has no `retval`).
    pub returns_value: bool,
    /// Its BTF type id (what a trampoline program is loaded against).
    pub btf_id: u32,
}

/// Every function in the running kernel's BTF (`/sys/kernel/btf/vmlinux`),
/// read once per process; `None` when the kernel has no BTF.
pub fn btf_functions() -> Option<&'static HashMap<String, KernelFunction>> {
    static FUNCS: OnceLock<Option<HashMap<String, KernelFunction>>> = OnceLock::new();
    FUNCS.get_or_init(read_btf_functions).as_ref()
}

fn read_btf_functions() -> Option<HashMap<String, KernelFunction>> {
    let btf = host_btf()?;
    let function = |(name, id): (&str, u32)| {
        let Kind::Func { proto, .. } = btf.kind(id) else { return None };
        let Kind::FuncProto { ret, params } = btf.kind(proto) else { return None };
        // A parameter wider than 8 bytes (a 16-byte struct by value) takes two slots.
        let slots = btf.params(params).iter().map(|p| if btf.size_of(p.ty).is_some_and(|s| s > 8) { 2 } else { 1 });
        Some((name.to_string(), KernelFunction { arg_slots: slots.sum(), returns_value: ret != 0, btf_id: id }))
    };
    Some(btf.functions().filter_map(function).collect())
}
