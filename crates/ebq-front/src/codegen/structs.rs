//! C struct declarations: the tracepoint record (from its format file) and planner layouts.

use crate::catalog::{FieldKind, TracepointFormat};
use crate::plan::StructLayout;
use crate::types::DataType;
use std::fmt::Write;

/// True when an integer field is naturally aligned, so `ctx->field` is a plain
/// context load the verifier accepts. Others are read with `bpf_probe_read_kernel`.
pub fn in_struct(offset: u32, size: u32) -> bool {
    matches!(size, 1 | 2 | 4 | 8) && offset.is_multiple_of(size) && offset >= 8
}

/// The record struct of a tracepoint, with explicit padding and offset checks.
pub fn event_struct(name: &str, event: &str, format: &TracepointFormat) -> String {
    let mut c = format!("/* {event}, laid out from its tracefs format file. */\nstruct {name} {{\n\t__u64 __common;\t/* common_* header: read through helpers */\n");
    let mut cursor = 8;
    let mut asserts = String::new();
    for f in &format.fields {
        let decl = match &f.kind {
            FieldKind::Int if in_struct(f.offset, f.size) => {
                format!("{} {}", DataType::int_of_size(f.size, f.signed).c_type(), f.name)
            }
            FieldKind::UserStr | FieldKind::UserArgv if in_struct(f.offset, f.size) => format!("__u64 {}", f.name),
            FieldKind::DataLocStr if f.size == 4 && f.offset.is_multiple_of(4) => format!("__u32 {}", f.name),
            FieldKind::CharArray { len } if f.offset >= 8 => format!("char {}[{len}]", f.name),
            FieldKind::IntArray { elem_size, len } if in_struct(f.offset, *elem_size) => {
                format!("{} {}[{len}]", DataType::int_of_size(*elem_size, f.signed).c_type(), f.name)
            }
            _ => continue,
        };
        if f.offset < cursor {
            continue; // overlapping or out of order: leave it to probe reads
        }
        if f.offset > cursor {
            let _ = writeln!(c, "\t__u8 __pad_{cursor}[{}];", f.offset - cursor);
        }
        let _ = writeln!(c, "\t{decl};\t/* offset {}, size {}: {} */", f.offset, f.size, f.c_type);
        let _ = writeln!(
            asserts,
            "_Static_assert(__builtin_offsetof(struct {name}, {}) == {}, \"{} moved\");",
            f.name, f.offset, f.name
        );
        cursor = f.offset + f.size;
    }
    let _ = write!(c, "}};\n{asserts}\n");
    c
}

/// A planner layout as a C struct.
pub fn layout_struct(name: &str, layout: &StructLayout) -> String {
    let mut c = format!("struct {name} {{\n");
    for f in &layout.fields {
        let _ = match f.ty {
            DataType::Str { cap } => writeln!(c, "\tchar {}[{cap}];\t/* offset {} */", f.name, f.offset),
            DataType::Buckets { len } => {
                writeln!(c, "\t__u64 {}[{len}];\t/* offset {}: bucket counters */", f.name, f.offset)
            }
            DataType::Registers { len } => {
                writeln!(c, "\t__u8 {}[{len}];\t/* offset {}: HyperLogLog registers */", f.name, f.offset)
            }
            ty => writeln!(c, "\t{} {};\t/* offset {} */", ty.c_type(), f.name, f.offset),
        };
    }
    let _ = write!(c, "}};\n_Static_assert(sizeof(struct {name}) == {}, \"{name} layout\");\n\n", layout.size);
    c
}
