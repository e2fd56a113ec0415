//! Columns and kernel knowledge for probe events (uprobes, kprobes, fentry).
//!
//! A probe has no tracefs record: its columns are the probed function's
//! arguments (`arg0`…`arg5`, at entry) or its return value (`retval`, at
//! return). They are described as a [`TracepointFormat`] of 8-byte unsigned
//! fields so the binder, the planner and `SELECT *` treat them like any other
//! event's fields; codegen reads each from registers (`struct pt_regs`) or
//! from the trampoline's argument array instead of a record offset.

use super::{Catalog, FieldKind, TpField, TracepointFormat};
use crate::parse::EventName;

/// Integer arguments passed in registers by the C calling conventions ebq maps
/// (x86-64 System V: rdi, rsi, rdx, rcx, r8, r9).
pub const MAX_REG_ARGS: u32 = 6;

/// `struct pt_regs` fields (`<asm/ptrace.h>`) holding integer arguments 0…5 on x86-64.
pub const ARG_REGS: [&str; MAX_REG_ARGS as usize] = ["rdi", "rsi", "rdx", "rcx", "r8", "r9"];

/// The column of a uprobe over a list of functions (`uprobe:LIB:{a,b}`):
/// the called function's position in the list (its BPF cookie).
pub const FUNC_COLUMN: &str = "func";

/// The column of a uprobe at entry: the probed function's address in the
/// traced process (`ip`; the kernel sets the instruction pointer to the probe
/// address before running its handlers). Minus the function's address in
/// the file, it is where the file is loaded in that process.
pub const IP_COLUMN: &str = "ip";

/// The `struct pt_regs` field holding the return value on x86-64.
pub const RET_REG: &str = "rax";

/// The columns of a probe event: `args` argument fields at entry, or `retval`
/// at return. Field offsets are 8 × the argument's slot (retval: slot `args`),
/// the layout of fentry's argument array.
pub fn argument_format(event: &EventName, args: u32, returns: bool) -> TracepointFormat {
    let (category, name) = match event {
        EventName::Uprobe { symbol, .. } => ("uprobe", symbol.clone()),
        EventName::Kprobe { function, .. } => ("kprobe", function.clone()),
        EventName::Fentry { function, .. } => ("fentry", function.clone()),
        EventName::Tracepoint { category, name } => (category.as_str(), name.clone()),
        EventName::Usdt { name, .. } => ("usdt", name.clone()),
        EventName::Timer { .. } => ("timer", event.to_string()),
    };
    let field = |name: String, slot: u32, signed: bool| TpField {
        name,
        c_type: (if signed { "s64" } else { "u64" }).into(),
        offset: slot * 8,
        size: 8,
        signed,
        kind: FieldKind::Int,
    };
    // A uprobe over a list of functions: which one fired, its position in the list.
    let func = matches!(event, EventName::Uprobe { symbol, .. } if symbol.starts_with('{'));
    let mut fields = if is_return(event) {
        if returns {
            // The same register twice: as stored, and as a signed number (`retval_signed < 0` for errors).
            vec![field("retval".into(), args, false), field("retval_signed".into(), args, true)]
        } else {
            vec![]
        }
    } else {
        (0..args.min(MAX_REG_ARGS)).map(|i| field(format!("arg{i}"), i, false)).collect()
    };
    if func {
        fields.push(field(FUNC_COLUMN.into(), args + 1, false));
    }
    if matches!(event, EventName::Uprobe { ret: false, .. }) {
        fields.push(field(IP_COLUMN.into(), args + 2, false));
    }
    TracepointFormat { category: category.into(), name, id: 0, fields }
}

/// True for uretprobe, kretprobe and fexit: the event fires as the function returns.
pub fn is_return(event: &EventName) -> bool {
    matches!(
        event,
        EventName::Uprobe { ret: true, .. }
            | EventName::Kprobe { ret: true, .. }
            | EventName::Fentry { exit: true, .. }
    )
}

/// Why a probe has no column `name` when it is one users reach for: arguments
/// at a return probe, `retval` at an entry probe.
pub fn unavailable_column(event: &EventName, name: &str) -> Option<String> {
    let is_arg = name.strip_prefix("arg").is_some_and(|n| n.parse::<u32>().is_ok());
    let entry_kind = match event {
        EventName::Uprobe { .. } => "uprobe",
        EventName::Kprobe { .. } => "kprobe",
        EventName::Fentry { .. } => "fentry",
        EventName::Tracepoint { .. } | EventName::Usdt { .. } | EventName::Timer { .. } => return None,
    };
    match (is_return(event), is_arg, name == "retval" || name == "retval_signed") {
        (true, true, _) if !matches!(event, EventName::Fentry { .. }) => Some(format!(
            "`{name}` is not available at {event}: argument registers are overwritten by the time a function returns; \
             read it at the {entry_kind} and pair the two events by tid"
        )),
        (false, _, true) => Some(format!(
            "`{name}` is not available at {event}: the function has not returned yet; use the return probe \
             ({})",
            return_spelling(event)
        )),
        (_, true, _) => {
            Some(format!("`{name}` is not available at {event}: only arg0…arg{} are mapped", MAX_REG_ARGS - 1))
        }
        _ => None,
    }
}

fn return_spelling(event: &EventName) -> String {
    match event {
        EventName::Uprobe { path, symbol, .. } => format!("uretprobe:{path}:{symbol}"),
        EventName::Kprobe { function, .. } => format!("kretprobe:{function}"),
        EventName::Fentry { function, .. } => format!("fexit:{function}"),
        EventName::Tracepoint { .. } | EventName::Usdt { .. } | EventName::Timer { .. } => event.to_string(),
    }
}

impl Catalog {
    /// Is `function` a kernel text symbol? kallsyms when readable (kprobes
    /// can attach to functions BTF omits) or BTF; `None` when neither is readable.
    pub fn is_kernel_function(&self, function: &str) -> Option<bool> {
        let in_btf = self.kernel().btf_functions().map(|f| f.contains_key(function));
        match self.kernel().kallsyms_has_function(function) {
            None => in_btf,
            Some(in_kallsyms) => Some(in_kallsyms || in_btf == Some(true)),
        }
    }

    /// Up to three kernel functions named like `function`.
    pub fn suggest_kernel_function(&self, function: &str) -> Vec<String> {
        let Some(funcs) = self.kernel().btf_functions() else { return vec![] };
        // Tens of thousands of names: skip those whose length alone rules out a close
        // match (closeness needs similarity >= 0.7, one edit, or containment) before
        // computing edit distances.
        let plausible = |n: &str| {
            let (a, b) = (function.len(), n.len());
            n.contains(function) || a.abs_diff(b) * 10 <= a.max(b) * 3 || a.abs_diff(b) <= 1
        };
        crate::suggest::closest(function, funcs.keys().map(String::as_str).filter(|n| plausible(n)))
    }
}

/// A tracepoint to use instead of probing kernel `function`: one whose name
/// contains the function's name without the usual prefixes (`vfs_read` →
/// `syscalls:sys_enter_read`), entry tracepoints preferred for entry probes.
pub fn tracepoint_alternative(catalog: &Catalog, function: &str, ret: bool) -> Option<String> {
    let mut stem = function;
    const PREFIXES: [&str; 9] =
        ["__x64_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "ksys_", "sys_", "vfs_", "do_", "__"];
    while let Some(rest) = PREFIXES.iter().find_map(|p| stem.strip_prefix(p)) {
        stem = rest;
    }
    if stem.len() < 3 {
        return None;
    }
    let events = catalog.list(None).ok()?;
    let preferred = if ret { "sys_exit_" } else { "sys_enter_" };
    let rank = |(c, n): &(String, String)| {
        let exact_syscall = n.strip_prefix(preferred) == Some(stem);
        let other_phase = n.starts_with("sys_exit_") || n.starts_with("sys_enter_");
        (!exact_syscall, other_phase && !n.starts_with(preferred), n.len(), c.clone(), n.clone())
    };
    events.iter().filter(|(_, n)| n.contains(stem)).min_by_key(|e| rank(e)).map(|(c, n)| format!("tracepoint:{c}:{n}"))
}
