//! Where string columns are read to: never the 512-byte BPF stack for
//! the big ones.
//!
//! CI found `SELECT *, <expression>` over `sys_enter_removexattrat` at 440
//! bytes of stack: its `pathname` and `name` (128 bytes each, zeroed and
//! read on the stack, then copied) plus 184 bytes of clang's spills for the
//! expression — a query that passed the plan's budget and failed in clang.
//! So:
//! - A record field, a `__data_loc` string or a user-memory string
//!   ([`in_string_scratch`]) is read into a per-CPU scratch value
//!   (`codegen::strings`). The programs that read such columns — classic
//!   tracepoints and USDT probes — all run under the kernel's one per-CPU
//!   `bpf_prog_active` guard, so two of them never interleave on a CPU and one
//!   value per object serves them all.
//! - A string that only fills its own output slot — a row's record field,
//!   an aggregate's key field — is read straight into it
//!   ([`slot_string_reads`]): no scratch, no copy. The read helpers zero the
//!   whole field when they fail; after a success the bytes past the NUL are
//!   whatever the ring held (the decoder stops at the NUL), or the zeroed
//!   key's zeros.
//! - A copy out of the scratch (a string the filter read, then projected or
//!   grouped by) is a `bpf_probe_read_kernel`, not a `__builtin_memcpy`:
//!   clang expands a 128-byte copy into an unaligned key or record field
//!   through the stack (measured: a GROUP BY filename over 512 bytes).
//!
//! `comm` (16 bytes) stays on the stack.

use super::{KernelOutput, KernelPlan, Pairing};
use crate::bind::{ColumnSource, ScalarExpr};
use crate::catalog::{FieldKind, SystemColumn};

/// Is `e` a string read through a pointer (or a JOIN start's one), which can
/// be unreadable when its event fires: then NULL, its slot's byte 0 a NUL
/// and byte 1 a 1 (`ebq_user_str_read` in the generated C), a mark only
/// fields [`super::StructField::null_marked`] says carry it are decoded by
/// (after the NUL of any other string field, a ring record holds stale
/// bytes). Such strings are: one in user memory (a page not resident at a
/// system call's entry, a bad pointer); execve's `argv`, when a read of its
/// array or of an entry fails (`codegen::user_str::argv`); and `str()` of a
/// kernel `char *` reached through BTF, when the pointer is NULL (the
/// binary's `bprm.fdpath` at an exec by path) or stale.
pub fn may_be_unreadable(e: &ScalarExpr) -> bool {
    let through_pointer = |c: &ColumnSource| match c {
        ColumnSource::Field { kind, .. } => matches!(kind, FieldKind::UserStr | FieldKind::UserArgv),
        ColumnSource::Arg(a) => a.string_at_pointer,
        _ => false,
    };
    matches!(e, ScalarExpr::Column { source, .. } if through_pointer(source.read_at_start()))
}

/// Is `e` execve's `argv` (or a JOIN start's), joined with where its entries
/// start (`codegen::user_str::argv`)?
pub(super) fn is_argv(e: &ScalarExpr) -> bool {
    matches!(e, ScalarExpr::Column { source, .. } if source.read_at_start().is_argv())
}

/// Is `c` read into the per-CPU string scratch rather than the stack?
pub fn in_string_scratch(c: &ColumnSource) -> bool {
    matches!(
        c,
        ColumnSource::Field {
            kind: FieldKind::CharArray { .. } | FieldKind::DataLocStr | FieldKind::UserStr | FieldKind::UserArgv,
            ..
        }
    )
}

/// Bytes `c` takes in the string scratch: its capacity, and for an `argv`
/// the 64 bytes of slack its entry reads need (`codegen::user_str::argv`).
/// On the stack, execveat's `argv` and `envp` took 2 × 192 bytes and a
/// `SELECT *, <expression>` over it failed in clang (a props seed in the
/// fresh-clone series), though the budget had counted 2 × 128.
pub fn scratch_bytes(c: &ColumnSource) -> u16 {
    c.string_cap().unwrap_or(1) + if c.is_argv() { crate::bind::ARGV_SLACK_BYTES } else { 0 }
}

/// Is `c` a string one helper call reads into a char array of its size
/// (`codegen::string_read`)?
fn read_in_one_call(c: &ColumnSource) -> bool {
    (in_string_scratch(c) && !c.is_argv()) || *c == ColumnSource::System(SystemColumn::Comm)
}

/// The output slots whose string column is read straight into them: for a
/// row output, indices into its record `fields`; for an aggregate, into its
/// `key_fields` (the key is zeroed first, so the bytes past the NUL hash as
/// zeros) — in both, the first indices of [`KernelOutput::exprs`]. A slot
/// qualifies when it is the bare column, no other output expression reads
/// the column, and what runs before the output — the `filter`, the end-side
/// keys of a JOIN's `pairing` — does not read it either (it is loaded
/// already). None for `ebq bench stages` programs.
pub fn slot_string_reads(output: &KernelOutput, filter: Option<&ScalarExpr>, pairing: Option<&Pairing>) -> Vec<usize> {
    let slots: Vec<&ScalarExpr> = match output {
        KernelOutput::Rows { fields, stage_limit: None, .. } => fields.iter().map(|(e, _)| e).collect(),
        KernelOutput::Aggregate { key_fields, .. } => key_fields.iter().map(|(e, _)| e).collect(),
        KernelOutput::Rows { .. } => return vec![],
    };
    let mut early: Vec<&ColumnSource> = vec![];
    let end_keys = pairing.iter().flat_map(|p| p.keys.iter().map(|(_, e, _)| e));
    for e in filter.into_iter().chain(end_keys) {
        e.visit_columns(&mut |c| early.push(c));
    }
    let mut uses: Vec<&ColumnSource> = vec![];
    for e in output.exprs() {
        e.visit_columns(&mut |c| uses.push(c));
    }
    let once = |c: &ColumnSource| uses.iter().filter(|u| **u == c).count() == 1;
    slots
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            ScalarExpr::Column { source, .. }
                if read_in_one_call(source) && once(source) && !early.contains(&source) =>
            {
                Some(i)
            }
            _ => None,
        })
        .collect()
}

impl KernelPlan {
    /// [`slot_string_reads`] of this program's output.
    pub fn string_slots(&self) -> Vec<usize> {
        slot_string_reads(&self.output, self.filter.as_ref(), self.pairing.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::DataType;

    /// execve's `argv` and a `const char *` argument are read from user
    /// memory and may be NULL; a record's char array never is.
    #[test]
    fn strings_read_through_a_pointer_may_be_unreadable() {
        let field = |kind| ScalarExpr::Column {
            source: ColumnSource::Field { name: "f".into(), offset: 16, size: 8, kind },
            ty: DataType::Str { cap: 128 },
        };
        assert!(may_be_unreadable(&field(FieldKind::UserArgv)));
        assert!(may_be_unreadable(&field(FieldKind::UserStr)));
        assert!(!may_be_unreadable(&field(FieldKind::CharArray { len: 16 })));
    }
}
