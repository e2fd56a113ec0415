//! `str(ptr[, len])`: the NUL-terminated string at a pointer, at most `len`
//! bytes (default 127). A pointer field of a tracepoint record (`buf`,
//! `args[1]`) addresses user memory and is read at the event like a `const
//! char *` argument ([`FieldKind::UserStr`]); a probe's argument (`str(arg1)`
//! at a uprobe) is read from its register; a kernel `char *` reached through
//! BTF (`str(bprm.filename)`) is read from kernel memory
//! ([`super::RawArg::string_at`]).

use super::expr::err;
use super::{Binder, ColumnSource, EventSource, ScalarExpr, USER_STRING_CAP};
use crate::catalog::FieldKind;
use crate::error::Result;
use crate::parse::Expr;
use crate::types::DataType;
use sqlparser::ast::{FunctionArgExpr, Value};

const USAGE: &str = "str(ptr[, len]) reads the string at a pointer: an 8-byte field of a tracepoint record \
                     (`buf`, `args[1]`), a probe's argument (`arg1`) or a kernel `char *` reached through BTF \
                     (`bprm.filename`), with an optional length 1..127";

impl Binder<'_> {
    /// Binds `str(…)` with arguments `args` (`e` is the whole call, for errors).
    pub(super) fn user_string(&self, e: &Expr, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
        let (arg, cap) = str_args(e, args, USAGE, "str")?;
        let len = args.get(1);
        // A probe's argument columns have no record header before them: arg0 is at slot 0.
        let probe = |s: &EventSource| {
            matches!(
                s,
                EventSource::Usdt { .. }
                    | EventSource::Uprobe { .. }
                    | EventSource::Kprobe { .. }
                    | EventSource::Fentry { .. }
            )
        };
        let first = if self.sides.iter().any(|s| probe(&s.event.source)) { 0 } else { 8 };
        let pointer = self.scalar(arg)?;
        match pointer {
            // bpftrace's `str(args.filename)`: already a string.
            s @ ScalarExpr::Column { ty: DataType::Str { .. }, .. } if len.is_none() => Ok(s),
            ScalarExpr::Column { source, ty } => match string_at(&source, cap, first) {
                Some(source) => Ok(ScalarExpr::Column { source, ty: DataType::Str { cap } }),
                None => Err(err(arg, refusal(&source, ty))),
            },
            _ => Err(err(arg, USAGE)),
        }
    }
}

/// The pointer argument of `name(ptr[, len])` (`str`, `str_at_exit`) and
/// the capacity its length asks for (bytes with the NUL; [`USER_STRING_CAP`]
/// without a length); `usage` is the error otherwise.
pub(super) fn str_args<'e>(e: &Expr, args: &[&'e FunctionArgExpr], usage: &str, name: &str) -> Result<(&'e Expr, u16)> {
    let (arg, len) = match args {
        [FunctionArgExpr::Expr(a)] => (a, None),
        [FunctionArgExpr::Expr(a), FunctionArgExpr::Expr(l)] => (a, Some(l)),
        _ => return Err(err(e, usage)),
    };
    let cap = match len {
        None => USER_STRING_CAP,
        Some(l @ Expr::Value(v)) => match &v.value {
            Value::Number(n, _) => match n.parse::<u16>() {
                Ok(n) if (1..USER_STRING_CAP).contains(&n) => n + 1,
                _ => return Err(err(l, format!("{name}()'s length must be 1..{}; `{n}` is not", USER_STRING_CAP - 1))),
            },
            _ => return Err(err(l, usage)),
        },
        Some(l) => return Err(err(l, usage)),
    };
    Ok((arg, cap))
}

/// Why `str()` does not read column `c` of type `ty`: what it is, then what
/// `str()` reads.
fn refusal(c: &ColumnSource, ty: DataType) -> String {
    let what = match c {
        ColumnSource::Arg(a) => format!("`{}` is a kernel `{}`, not a `char *`", a.path, a.c_type),
        ColumnSource::Start { column, .. } => return refusal(column, ty),
        ColumnSource::Field { size, .. } if *size != 8 => {
            format!("`{}` is a {size}-byte field, not a pointer", c.name())
        }
        c => format!("`{}` ({ty}) is not a pointer str() can read", c.name()),
    };
    format!("{what}; {USAGE}")
}

/// The string read at the pointer `c` (or the JOIN start's column it
/// carries): an 8-byte, aligned record field or probe argument, or a kernel
/// `char *`; named `str(c)` (`str(c, len)` when shorter than the default).
fn string_at(c: &ColumnSource, cap: u16, first: u32) -> Option<ColumnSource> {
    let call = |name: &str| match cap {
        USER_STRING_CAP => format!("str({name})"),
        _ => format!("str({name}, {})", cap - 1),
    };
    match c {
        // A `const char *` argument is read as a string already (`UserStr`); a length reads it shorter.
        ColumnSource::Field { name, offset, size: 8, kind: FieldKind::Int | FieldKind::UserStr }
            if offset % 8 == 0 && *offset >= first =>
        {
            Some(ColumnSource::Field { name: call(name), offset: *offset, size: 8, kind: FieldKind::UserStr })
        }
        ColumnSource::Arg(a) => Some(ColumnSource::Arg(Box::new(a.string_at(cap, call(&a.path))?))),
        ColumnSource::Start { name, column } => {
            Some(ColumnSource::Start { name: call(name), column: Box::new(string_at(column, cap, first)?) })
        }
        _ => None,
    }
}
