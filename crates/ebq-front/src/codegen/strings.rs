//! The per-CPU string scratch: record-field, `__data_loc` and user-memory
//! strings are read into `struct ebq_strings`, not onto the BPF stack
//! (why, and why one value per object is safe: `plan::string_buffers`).
//! A program that reads such a string looks the value up once, as
//! `strings`, and the column's C name is its field (`strings->ev_name`):
//! comparisons index it, and copies out of it into a key or record go
//! through `bpf_probe_read_kernel` (`codegen::assign`).

use super::columns_of;
use crate::bind::ScalarExpr;
use crate::plan::{in_string_scratch, KernelOutput, KernelPlan, Pairing, StageLimit};
use std::fmt::Write as _;

/// The local a program keeps the scratch value in.
pub const POINTER: &str = "strings";

/// The statements that make [`POINTER`] available; a program runs them first.
pub const LOOKUP: &str = "\tstruct ebq_strings *strings = ebq_strings_buf();\n\tif (!strings)\n\t\treturn 0;\n";

/// Does the main (or union branch) program `k` read a scratch string? The
/// strings read straight into their output slot do not count, nor do carried
/// ones (read from the pair).
pub fn main_reads(k: &KernelPlan) -> bool {
    let end_keys = k.pairing.iter().flat_map(|p| p.keys.iter().map(|(_, e, _)| e));
    let in_slot = k.string_slots();
    // `ebq bench stages`: the output's columns are read from the Build stage on, none into the record.
    let output_read = |i: &usize| match &k.output {
        KernelOutput::Rows { stage_limit: Some(limit), .. } => *limit >= StageLimit::Build,
        _ => !in_slot.contains(i),
    };
    let output = k.output.exprs().into_iter().enumerate().filter(|(i, _)| output_read(i));
    let exprs = k.filter.iter().chain(end_keys).chain(output.map(|(_, e)| e));
    any_scratch(exprs)
}

/// Does start program `p` (one start event of a pairing) read a scratch string?
pub fn start_reads(p: &Pairing) -> bool {
    let carried = p.carried.iter().any(|(c, _, _)| in_string_scratch(c.read_at_start()) && !p.reads_at_end(c));
    carried || any_scratch(p.start_filter.iter().chain(p.keys.iter().map(|(s, _, _)| s)))
}

fn any_scratch<'a>(exprs: impl IntoIterator<Item = &'a ScalarExpr>) -> bool {
    columns_of(exprs, &[]).iter().any(|(c, _)| in_string_scratch(c))
}

/// The struct, map and lookup helper, when any program of `k`'s object reads
/// a scratch string: one field per column (the largest capacity when union
/// branches read same-named columns of different sizes).
pub fn declarations(k: &KernelPlan) -> Option<(String, u32)> {
    let used = k.with_branches().any(main_reads) || k.pairings().flat_map(|p| p.starts()).any(|s| start_reads(&s));
    if !used {
        return None;
    }
    let mut fields: Vec<(String, u16)> = vec![];
    k.visit_columns_read(&mut |c| {
        if !in_string_scratch(c) {
            return;
        }
        let (name, cap) = (super::plain_local_name(c), crate::plan::scratch_bytes(c));
        match fields.iter_mut().find(|(n, _)| *n == name) {
            Some((_, size)) => *size = (*size).max(cap),
            None => fields.push((name, cap)),
        }
    });
    let mut c = String::from(
        "/* String columns, read here rather than onto the 512-byte BPF stack. The programs that\n \
         * read them (classic tracepoints, USDT probes) share the kernel's per-CPU bpf_prog_active\n \
         * guard: they never interleave on a CPU, so one value serves them all. */\nstruct ebq_strings {\n",
    );
    let mut bytes = 0;
    for (name, size) in &fields {
        let _ = writeln!(c, "\tchar {name}[{size}] __attribute__((aligned(8)));");
        bytes += u32::from(*size).next_multiple_of(8);
    }
    c.push_str(
        "};\n\nstruct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\
         \t__type(value, struct ebq_strings);\n} ebq_strings SEC(\".maps\");\n\n\
         static __always_inline struct ebq_strings *ebq_strings_buf(void)\n{\n\t__u32 zero = 0;\n\n\
         \treturn bpf_map_lookup_elem(&ebq_strings, &zero);\n}\n\n",
    );
    Some((c, bytes))
}

/// Writes the string constant `e` chooses (a constant, or a CASE of them)
/// into the char array `dest`: zeroed first (a ring record is not), then one
/// `__builtin_memcpy` of the chosen literal and its NUL, which clang turns
/// into immediate stores; a CASE becomes an if/else chain over its conditions.
pub fn constant(dest: &str, e: &ScalarExpr) -> String {
    format!("\t__builtin_memset({dest}, 0, sizeof({dest}));\n{}", choose(dest, e, 1))
}

fn choose(dest: &str, e: &ScalarExpr, depth: usize) -> String {
    let tabs = "\t".repeat(depth);
    match e {
        ScalarExpr::Str { value, .. } => {
            format!("{tabs}__builtin_memcpy({dest}, {}, {});\n", c_string(value), value.len() + 1)
        }
        ScalarExpr::Cond { cond, then, otherwise, .. } => format!(
            "{tabs}if ({}) {{\n{}{tabs}}} else {{\n{}{tabs}}}\n",
            super::c_expr(cond),
            choose(dest, then, depth + 1),
            choose(dest, otherwise, depth + 1)
        ),
        other => unreachable!("a constant string expression, not {other}"),
    }
}

/// `value` as a C string literal: printable ASCII as is (with `"` and `\`
/// escaped), every other byte in octal.
fn c_string(value: &str) -> String {
    let mut out = String::from("\"");
    for b in value.bytes() {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}
