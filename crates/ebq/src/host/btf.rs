//! The running kernel's BTF: its functions (for fentry/fexit and kernel
//! function suggestions) and whether CO-RE programs can be compiled at all.

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
    use libbpf_sys as sys;
    let path = std::ffi::CString::new(DEFAULT_KERNEL_BTF).ok()?;
    // SAFETY: path is a valid C string; libbpf returns NULL or an error pointer on failure.
    let btf = unsafe { sys::btf__parse_raw(path.as_ptr()) };
    if btf.is_null() || (btf as isize) < 0 && (btf as isize) > -4096 {
        return None;
    }
    let mut out = HashMap::new();
    // SAFETY: btf is a valid handle until btf__free below; every type id is < btf__type_cnt,
    // and a FUNC_PROTO is followed in memory by its `vlen` btf_param entries (BTF format).
    unsafe {
        for id in 1..sys::btf__type_cnt(btf) {
            let t = sys::btf__type_by_id(btf, id);
            if t.is_null() || ((*t).info >> 24) & 0x1f != sys::BTF_KIND_FUNC {
                continue;
            }
            let name = sys::btf__name_by_offset(btf, (*t).name_off);
            let proto = sys::btf__type_by_id(btf, (*t).__bindgen_anon_1.type_);
            if name.is_null() || proto.is_null() {
                continue;
            }
            let vlen = (*proto).info & 0xffff;
            let params = proto.add(1) as *const sys::btf_param;
            let mut slots = 0;
            for i in 0..vlen as usize {
                let size = sys::btf__resolve_size(btf, (*params.add(i)).type_);
                slots += if size > 8 { 2 } else { 1 };
            }
            let returns_value = (*proto).__bindgen_anon_1.type_ != 0;
            let name = std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned();
            out.insert(name, KernelFunction { arg_slots: slots, returns_value, btf_id: id });
        }
        sys::btf__free(btf);
    }
    Some(out)
}
