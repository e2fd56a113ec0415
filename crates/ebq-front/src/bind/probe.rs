//! Binding probe events: the uprobe's binary and symbol, the kernel function
//! of a kprobe or fentry, each checked here so a typo is a positioned error
//! with suggestions, not a failed attach.

use super::{BoundEvent, EventSource};
use crate::catalog::probe::{argument_format, tracepoint_alternative, MAX_REG_ARGS};
use crate::catalog::Catalog;
use crate::error::{Error, QueryError, Result, Stage};
use crate::host::ElfError;
use crate::parse::{EventName, EventRef, TimerUnit};

/// Binds a uprobe, kprobe or fentry event (or a USDT probe or a timer),
/// each kind by its own function below; x86-64 only (the argument registers).
pub(super) fn bind_probe(from: &EventRef, catalog: &Catalog) -> Result<BoundEvent> {
    let name = from.name.clone();
    let arch = catalog.kernel().arch();
    if arch != crate::host::X86_64 {
        return fail(
            from,
            format!("{name}: probe arguments are mapped for x86-64 only, and this is {arch}"),
            Some("use a tracepoint (`ebq events`)".into()),
        );
    }
    match &from.name {
        EventName::Usdt { .. } => super::usdt::bind_usdt(from, catalog),
        EventName::Timer { profile, unit, n } => bind_timer(from, *profile, *unit, *n),
        EventName::Uprobe { path, symbol, ret } => bind_uprobe(from, catalog, path, symbol, *ret),
        EventName::Kprobe { function, ret } => {
            if catalog.is_kernel_function(function) == Some(false) {
                return fail(
                    from,
                    format!("{name}: the kernel has no function `{function}`"),
                    did_you_mean(catalog.suggest_kernel_function(function)),
                );
            }
            Ok(BoundEvent {
                format: argument_format(&name, MAX_REG_ARGS, true),
                source: EventSource::Kprobe {
                    function: function.clone(),
                    ret: *ret,
                    alternative: tracepoint_alternative(catalog, function, *ret),
                },
                name,
            })
        }
        EventName::Fentry { function, exit } => bind_fentry(from, catalog, function, *exit),
        EventName::Tracepoint { .. } => unreachable!("tracepoints are bound by bind_event"),
    }
}

/// A positioned bind error at the event, with an optional hint.
fn fail<T>(from: &EventRef, message: String, help: Option<String>) -> Result<T> {
    let mut e = QueryError::new(Stage::Bind, message, Some(from.span));
    if let Some(h) = help {
        e = e.with_help(h);
    }
    Err(Error::Query(e))
}

/// "did you mean `a`, `b`?" for a non-empty list of suggestions.
fn did_you_mean(s: Vec<String>) -> Option<String> {
    (!s.is_empty())
        .then(|| format!("did you mean {}?", s.iter().map(|x| format!("`{x}`")).collect::<Vec<_>>().join(", ")))
}

/// `profile:hz:N` (every CPU) or `interval:ms:N` (one CPU): a perf timer.
fn bind_timer(from: &EventRef, profile: bool, unit: TimerUnit, n: u64) -> Result<BoundEvent> {
    let name = from.name.clone();
    // perf refuses rates above kernel.perf_event_max_sample_rate (100000 by default, lowered
    // under load); a profile beyond 10 kHz mostly measures itself.
    let (hz, period_ns) = match unit {
        TimerUnit::Hz if n <= 10_000 => (n, 0),
        TimerUnit::Hz => {
            return fail(
                from,
                format!("{name}: at most 10000 samples a second"),
                Some("profile:hz:99 is the usual rate".into()),
            )
        }
        TimerUnit::Ms => (0, n.saturating_mul(1_000_000)),
    };
    Ok(BoundEvent {
        format: crate::catalog::TracepointFormat {
            category: (if profile { "profile" } else { "interval" }).into(),
            name: name.to_string(),
            id: 0,
            fields: vec![],
        },
        source: EventSource::Timer { hz, period_ns, all_cpus: profile },
        name,
    })
}

/// `uprobe:BINARY:SYMBOL[,SYMBOL…]`: the binary found (a path, or a library
/// by name) and each symbol's offset in it, with suggestions for a typo.
fn bind_uprobe(from: &EventRef, catalog: &Catalog, path: &str, symbol: &str, ret: bool) -> Result<BoundEvent> {
    let name = from.name.clone();
    let file = match catalog.kernel().resolve_binary(path) {
        Ok(f) => f,
        Err(e) => {
            let looked = match e {
                ElfError::NoFile { looked } if !path.contains('/') => looked.join(", "),
                _ => "the standard library directories".into(),
            };
            return fail(
                from,
                format!("{name}: no file `{path}`"),
                Some(format!("give the binary's path, or the name of a library in {looked}")),
            );
        }
    };
    let names = crate::parse::uprobe_symbols(symbol);
    let mut found = vec![];
    for (name_i, result) in names.iter().zip(catalog.kernel().find_symbols(&file, &names)) {
        let symbol = *name_i;
        match result {
            Ok(s) => found.push((symbol.to_string(), s)),
            Err(ElfError::NoSymbol { suggestions }) => {
                return fail(
                    from,
                    format!("{name}: `{}` has no function `{symbol}`", file.display()),
                    did_you_mean(suggestions)
                        .or_else(|| Some(format!("`nm -D {}` lists its functions", file.display()))),
                )
            }
            Err(ElfError::Imported) => {
                return fail(
                    from,
                    format!("{name}: `{}` calls `{symbol}` from a shared library but does not define it", file.display()),
                    Some(format!("probe the library that defines it, e.g. `uprobe:libc:{symbol}` (with -p to limit it to one process)")),
                )
            }
            Err(ElfError::NotElf(why)) => return fail(from, format!("{name}: {why}"), None),
            Err(ElfError::NoFile { .. }) => return fail(from, format!("{name}: no file `{path}`"), None),
        }
    }
    let functions: Vec<(String, u64)> =
        if found.len() > 1 { found.iter().map(|(n, s)| (n.clone(), s.offset)).collect() } else { vec![] };
    let (_, sym) = found.swap_remove(0);
    Ok(BoundEvent {
        format: argument_format(&name, MAX_REG_ARGS, true),
        source: EventSource::Uprobe { path: sym.path, symbol: symbol.to_string(), offset: sym.offset, ret, functions },
        name,
    })
}

/// `fentry:FUNCTION` / `fexit:FUNCTION`: the function's BTF (its argument slots).
fn bind_fentry(from: &EventRef, catalog: &Catalog, function: &str, exit: bool) -> Result<BoundEvent> {
    let name = from.name.clone();
    let Some(funcs) = catalog.kernel().btf_functions() else {
        return fail(
            from,
            format!(
                "{name}: fentry and fexit need the kernel's BTF (/sys/kernel/btf/vmlinux), which this kernel lacks"
            ),
            Some("use a kprobe or a tracepoint (`ebq events`)".into()),
        );
    };
    let Some(f) = funcs.get(function) else {
        return fail(
            from,
            format!("{name}: the kernel's BTF has no function `{function}`"),
            did_you_mean(catalog.suggest_kernel_function(function)),
        );
    };
    Ok(BoundEvent {
        format: argument_format(&name, f.arg_slots, f.returns_value),
        source: EventSource::Fentry {
            function: function.to_string(),
            exit,
            arg_slots: f.arg_slots,
            alternative: tracepoint_alternative(catalog, function, exit),
        },
        name,
    })
}

impl EventSource {
    /// The BPF program type attached, for EXPLAIN.
    pub fn program_type(&self) -> &'static str {
        match self {
            EventSource::Tracepoint => "BPF_PROG_TYPE_TRACEPOINT",
            EventSource::TracepointBtf => "tp_btf, BPF_PROG_TYPE_TRACING: the query reads raw arguments",
            EventSource::Uprobe { .. } | EventSource::Kprobe { .. } => "BPF_PROG_TYPE_KPROBE",
            EventSource::Usdt { .. } => "BPF_PROG_TYPE_KPROBE (a uprobe on each site)",
            EventSource::Timer { .. } => "BPF_PROG_TYPE_PERF_EVENT (software cpu-clock)",
            EventSource::Fentry { .. } => "BPF_PROG_TYPE_TRACING",
            EventSource::RawSyscall { .. } => "BPF_PROG_TYPE_TRACING, tp_btf",
            EventSource::Expand { .. } => "BPF_PROG_TYPE_TRACEPOINT, a bpf_loop over the call's array",
        }
    }
}

impl BoundEvent {
    /// Where the event's values come from, for `ebq describe`: the tracepoint
    /// id, or the probed file and offset.
    pub fn origin(&self) -> String {
        match &self.source {
            EventSource::Tracepoint | EventSource::TracepointBtf => format!("id {}", self.format.id),
            EventSource::RawSyscall { nr, exit } => {
                let raw = if *exit { "sys_exit" } else { "sys_enter" };
                match nr {
                    Some(nr) => format!("system call {nr} on the raw tracepoint {raw}"),
                    None => format!("every system call on the raw tracepoint {raw}"),
                }
            }
            EventSource::Uprobe { path, functions, .. } if !functions.is_empty() => {
                let at: Vec<String> = functions.iter().map(|(f, o)| format!("{f} {o:#x}")).collect();
                format!(
                    "{}, {} functions at file offsets {} (one uprobe_multi link)",
                    path.display(),
                    functions.len(),
                    at.join(", ")
                )
            }
            EventSource::Uprobe { path, offset, .. } => format!("{}, file offset {offset:#x}", path.display()),
            EventSource::Expand { expansion, trigger } => format!(
                "{}; at tracepoint {}:{} (id {})",
                expansion.description(),
                trigger.category,
                trigger.name,
                trigger.id
            ),
            EventSource::Kprobe { .. } => "kernel function, via kprobes".into(),
            EventSource::Timer { hz, period_ns, all_cpus } => format!(
                "perf software cpu-clock, {} on {}",
                if *hz > 0 { format!("{hz} samples/s") } else { format!("every {} ms", period_ns / 1_000_000) },
                if *all_cpus { "every CPU" } else { "CPU 0" }
            ),
            EventSource::Usdt { path, sites, .. } => {
                let guarded = sites.iter().filter(|s| s.semaphore != 0).count();
                let offsets: Vec<String> = sites.iter().map(|s| format!("{:#x}", s.offset)).collect();
                format!(
                    "{}, {} site(s) at file offset(s) {}, {guarded} guarded by a semaphore",
                    path.display(),
                    sites.len(),
                    offsets.join(", ")
                )
            }
            EventSource::Fentry { arg_slots, .. } => {
                format!("kernel function with {arg_slots} argument slots, via BPF trampolines")
            }
        }
    }

    /// Where one column's value comes from, for `ebq describe`.
    pub fn field_origin(&self, field: &crate::catalog::TpField) -> String {
        let arg = field.name.strip_prefix("arg").and_then(|n| n.parse::<usize>().ok());
        let signed = if field.signed { ", as a signed number" } else { "" };
        match (&self.source, arg) {
            (EventSource::Uprobe { functions, .. }, None) if field.name == crate::catalog::probe::FUNC_COLUMN => {
                let names: Vec<String> = functions.iter().enumerate().map(|(i, (f, _))| format!("{i} {f}")).collect();
                format!("the called function's position in the list (its BPF cookie): {}", names.join(", "))
            }
            (EventSource::Uprobe { .. }, None) if field.name == crate::catalog::probe::IP_COLUMN => {
                "the probed function's address in the traced process (register rip)".to_string()
            }
            // ebq's own record of one element: the field's meaning.
            (EventSource::Expand { .. }, _) => field.c_type.clone(),
            (EventSource::Tracepoint | EventSource::TracepointBtf | EventSource::RawSyscall { .. }, _) => {
                format!("offset {}, size {}: {}", field.offset, field.size, field.c_type)
            }
            (EventSource::Usdt { specs, .. }, Some(i)) => {
                let spec: Vec<&str> = specs.variants.iter().filter_map(|v| v.get(i)).map(|a| a.spec.as_str()).collect();
                format!("argument {i} (USDT spec {}){signed}", spec.join(" | "))
            }
            (EventSource::Fentry { .. }, Some(i)) => format!("argument {i} (ctx[{i}])"),
            (EventSource::Fentry { arg_slots, .. }, None) => format!("return value (ctx[{arg_slots}]){signed}"),
            (_, Some(i)) => format!("argument {i} (register {})", crate::catalog::probe::ARG_REGS[i]),
            (_, None) => format!("return value (register {}){signed}", crate::catalog::probe::RET_REG),
        }
    }
}
