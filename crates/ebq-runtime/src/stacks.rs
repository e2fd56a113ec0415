//! `kstack` / `ustack` in user space: stack ids → frames (from the
//! `ebq_stacks` map) → symbols, innermost frame first, joined by "; ".
//!
//! Kernel frames resolve against /proc/kallsyms (read once, sorted, binary
//! searched); user frames through /proc/TGID/maps to a file offset, then to
//! the file's ELF symbols (.symtab and .dynsym). What does not resolve shows
//! as `file+0xOFF` or `0xADDR`. A process's mappings are read while it lives
//! (user stacks are resolved at each poll, see [`Stacks::prefetch`]) and kept.

use ebq_exec::Value;
use ebq_front::codegen::EMPTY_STACK_ID;
use ebq_front::plan::{StructLayout, UserSource};
use ebq_front::types::DataType;
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use object::{Object, ObjectSegment, ObjectSymbol};
use std::cell::RefCell;
use std::collections::HashMap;

/// Sorted (address, name, size) symbols; size 0 when unknown.
type Symbols = Vec<(u64, String, u64)>;

/// One executable mapping of a process: [start, end) at file offset `offset` of `path`.
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

/// An ELF file's functions and loadable segments (vaddr, file offset, file size).
struct ElfSyms {
    symbols: Symbols,
    segments: Vec<(u64, u64, u64)>,
}

/// The stack map of one query and what symbolizing it has learnt.
pub(super) struct Stacks {
    map: MapHandle,
    kernel: RefCell<Option<Symbols>>,
    procs: RefCell<HashMap<u32, Vec<Mapping>>>,
    files: RefCell<HashMap<String, Option<ElfSyms>>>,
    /// Symbolized stacks by (user, raw id): ids are stable while the map lives.
    names: RefCell<HashMap<(bool, u64), String>>,
}

impl Stacks {
    /// Wraps the loaded `ebq_stacks` map.
    pub(super) fn new(map: MapHandle) -> Stacks {
        Stacks {
            map,
            kernel: Default::default(),
            procs: Default::default(),
            files: Default::default(),
            names: Default::default(),
        }
    }

    /// Replaces raw stack ids in `inputs` (the user plan's inputs of one
    /// group or row) by their frames, for inputs read from a stack field.
    pub(super) fn symbolize_inputs(&self, inputs: &[UserSource], layout: &StructLayout, row: &mut [Value]) {
        for (source, v) in inputs.iter().zip(row.iter_mut()) {
            let i = match *source {
                UserSource::Key(i) | UserSource::Row(i) => i,
                _ => continue,
            };
            if let (DataType::Stack { user }, Value::U(raw)) = (layout.fields[i].ty, &*v) {
                *v = Value::S(self.name(user, *raw));
            }
        }
    }

    /// Resolves the user stacks of `keys` now, while their processes live.
    pub(super) fn prefetch(&self, layout: &StructLayout, keys: impl Iterator<Item = Vec<u8>>) {
        let fields: Vec<_> = layout.fields.iter().filter(|f| f.ty == DataType::Stack { user: true }).collect();
        if fields.is_empty() {
            return;
        }
        for k in keys {
            for f in &fields {
                if let Value::U(raw) = ebq_exec::decode::field_value(&k, f) {
                    self.name(true, raw);
                }
            }
        }
    }

    /// The frames of stack `raw`, cached.
    fn name(&self, user: bool, raw: u64) -> String {
        if let Some(s) = self.names.borrow().get(&(user, raw)) {
            return s.clone();
        }
        let text = match raw as u32 {
            EMPTY_STACK_ID => empty_stack(user).to_string(),
            id => self.symbolize(user, raw, &self.frames(id)),
        };
        self.names.borrow_mut().insert((user, raw), text.clone());
        text
    }

    /// `frames` of stack `raw` as text, innermost first.
    fn symbolize(&self, user: bool, raw: u64, frames: &[u64]) -> String {
        if frames.is_empty() {
            "[no stack]".to_string()
        } else if user {
            let tgid = (raw >> 32) as u32;
            frames.iter().map(|&a| self.user_frame(tgid, a)).collect::<Vec<_>>().join("; ")
        } else {
            let named: Vec<String> = frames.iter().map(|&a| self.kernel_frame(a)).collect();
            without_tracing_frames(&named).join("; ")
        }
    }

    /// Return addresses of stack `id`, innermost first.
    fn frames(&self, id: u32) -> Vec<u64> {
        let Ok(Some(bytes)) = self.map.lookup(&id.to_ne_bytes(), MapFlags::ANY) else { return vec![] };
        bytes.chunks_exact(8).map(|c| u64::from_ne_bytes(c.try_into().unwrap())).take_while(|&a| a != 0).collect()
    }

    fn kernel_frame(&self, addr: u64) -> String {
        let mut kernel = self.kernel.borrow_mut();
        let syms = kernel.get_or_insert_with(kallsyms);
        lookup(syms, addr).map_or_else(|| format!("{addr:#x}"), |(name, off)| format!("{name}+{off:#x}"))
    }

    fn user_frame(&self, tgid: u32, addr: u64) -> String {
        let mut procs = self.procs.borrow_mut();
        let maps = procs.entry(tgid).or_insert_with(|| proc_maps(tgid));
        let Some(m) = maps.iter().find(|m| m.start <= addr && addr < m.end) else { return format!("{addr:#x}") };
        let file_off = addr - m.start + m.offset;
        let mut files = self.files.borrow_mut();
        let elf = files.entry(m.path.clone()).or_insert_with(|| elf_syms(&m.path));
        let base = m.path.rsplit('/').next().unwrap_or(&m.path);
        let resolved = elf.as_ref().and_then(|e| {
            let (vaddr, seg_off, _) = e.segments.iter().find(|(_, o, sz)| *o <= file_off && file_off < o + sz)?;
            lookup(&e.symbols, file_off - seg_off + vaddr)
        });
        match resolved {
            Some((name, off)) => format!("{name}+{off:#x}"),
            None => format!("{base}+{file_off:#x}"),
        }
    }
}

/// What an empty stack shows: a kernel stack is empty when the event fired in
/// user mode, a user stack when a kernel thread (no user memory) was running.
fn empty_stack(user: bool) -> &'static str {
    if user {
        "[kernel]"
    } else {
        "[user]"
    }
}

/// Kernel frames that belong to the tracing machinery, not to the traced code:
/// the BPF program itself and the tracepoint trampolines that called it. A
/// tp_btf/raw_tp program's stack starts inside them (the helper captures the
/// program's own registers), a classic tracepoint's at the call site.
fn is_tracing_frame(frame: &str) -> bool {
    ["bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_", "bpf_get_stackid"]
        .iter()
        .any(|p| frame.starts_with(p))
}

/// `frames` (innermost first) without the leading frames of the tracing machinery;
/// all of them when nothing else is left.
fn without_tracing_frames(frames: &[String]) -> &[String] {
    match frames.iter().position(|f| !is_tracing_frame(f)) {
        Some(first) => &frames[first..],
        None => frames,
    }
}

/// The symbol containing `addr` (the last one at or below it) and the offset into it.
fn lookup(syms: &Symbols, addr: u64) -> Option<(&str, u64)> {
    let i = syms.partition_point(|(a, _, _)| *a <= addr).checked_sub(1)?;
    let (a, name, size) = &syms[i];
    // Past a sized symbol's end the address is in code no symbol names (a stripped
    // object's local functions): better `file+0xOFF` than a wrong name.
    (*size == 0 || addr - a < *size).then_some((name.as_str(), addr - a))
}

/// Text symbols of /proc/kallsyms, sorted (empty when unreadable or hidden by kptr_restrict).
fn kallsyms() -> Symbols {
    ebq_front::host::kallsyms::text_symbols().into_iter().map(|(addr, name)| (addr, name, 0)).collect()
}

/// Executable file mappings of process `tgid` (empty when it is gone).
fn proc_maps(tgid: u32) -> Vec<Mapping> {
    let text = std::fs::read_to_string(format!("/proc/{tgid}/maps")).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace();
            let (range, perms, offset) = (parts.next()?, parts.next()?, parts.next()?);
            let path = parts.nth(2)?;
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (s, e) = range.split_once('-')?;
            Some(Mapping {
                start: u64::from_str_radix(s, 16).ok()?,
                end: u64::from_str_radix(e, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path: path.to_string(),
            })
        })
        .collect()
}

/// Functions and loadable segments of the ELF file at `path`.
fn elf_syms(path: &str) -> Option<ElfSyms> {
    // Mappings can be device files: read only what is an ELF object of sane size.
    let data = ebq_front::host::elf::read_elf(std::path::Path::new(path)).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let mut symbols: Symbols = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(ebq_front::host::elf::is_defined_function)
        .filter_map(|s| Some((s.address(), s.name().ok()?.to_string(), s.size())))
        .collect();
    symbols.sort_unstable();
    symbols.dedup_by_key(|(a, _, _)| *a);
    let segments = file
        .segments()
        .map(|s| {
            let (off, size) = s.file_range();
            (s.address(), off, size)
        })
        .collect();
    Some(ElfSyms { symbols, segments })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_tracing_frames_are_left_out_and_later_ones_kept() {
        let frames: Vec<String> = [
            "bpf_prog_6deef7357e7b4530_ebq_pair_start+0xcb",
            "bpf_trace_run4+0x6a",
            "__traceiter_sched_switch+0x2e",
            "__schedule+0x3f1",
            "bpf_trace_run2+0x10",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(without_tracing_frames(&frames), &frames[3..]);
        assert_eq!(without_tracing_frames(&frames[..3]), &frames[..3], "nothing but tracing: kept whole");
    }

    #[test]
    fn lookup_picks_the_enclosing_symbol() {
        let syms: Symbols = vec![(0x100, "a".into(), 0), (0x200, "b".into(), 0x10)];
        assert_eq!(lookup(&syms, 0x80), None);
        assert_eq!(lookup(&syms, 0x100), Some(("a", 0)));
        assert_eq!(lookup(&syms, 0x1ff), Some(("a", 0xff)));
        assert_eq!(lookup(&syms, 0x20f), Some(("b", 0xf)));
        assert_eq!(lookup(&syms, 0x234), None, "past b's end");
    }
}
