//! `str(ptr[, len])`: the NUL-terminated string in user memory at a pointer
//! column (`buf`, `args[1]`), read at the event like a `const char *`
//! argument ([`FieldKind::UserStr`]), at most `len` bytes (default 127). A
//! probe's argument (`str(arg1)` at a uprobe) is read from its register.

use super::expr::err;
use super::{Binder, ColumnSource, EventSource, ScalarExpr, USER_STRING_CAP};
use crate::catalog::FieldKind;
use crate::error::Result;
use crate::parse::Expr;
use crate::types::DataType;
use sqlparser::ast::{FunctionArgExpr, Value};

const USAGE: &str = "str(ptr[, len]) reads the string at a user-space pointer: an 8-byte field of a tracepoint \
                     (`buf`, `args[1]`) and an optional length 1..127";

impl Binder<'_> {
    /// Binds `str(…)` with arguments `args` (`e` is the whole call, for errors).
    pub(super) fn user_string(&self, e: &Expr, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
        let (arg, len) = match args {
            [FunctionArgExpr::Expr(a)] => (a, None),
            [FunctionArgExpr::Expr(a), FunctionArgExpr::Expr(l)] => (a, Some(l)),
            _ => return Err(err(e, USAGE)),
        };
        let cap = match len {
            None => USER_STRING_CAP,
            Some(l @ Expr::Value(v)) => match &v.value {
                Value::Number(n, _) => match n.parse::<u16>() {
                    Ok(n) if (1..USER_STRING_CAP).contains(&n) => n + 1,
                    _ => {
                        return Err(err(l, format!("str()'s length must be 1..{}; `{n}` is not", USER_STRING_CAP - 1)))
                    }
                },
                _ => return Err(err(l, USAGE)),
            },
            Some(l) => return Err(err(l, USAGE)),
        };
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
        if self.sides.iter().any(|s| s.event.source != EventSource::Tracepoint && !probe(&s.event.source)) {
            return Err(err(
                e,
                "str() reads user-space pointers in tracepoint records and probe arguments (uprobe, USDT, kprobe, \
                 fentry); a kernel pointer reached through BTF (tp_btf, raw_tp) is not read by str() yet",
            ));
        }
        let first = if self.sides.iter().any(|s| probe(&s.event.source)) { 0 } else { 8 };
        let pointer = self.scalar(arg)?;
        match pointer {
            // bpftrace's `str(args.filename)`: already a string.
            s @ ScalarExpr::Column { ty: DataType::Str { .. }, .. } if len.is_none() => Ok(s),
            ScalarExpr::Column { source, .. } => match user_str(source, cap, first) {
                Some(source) => Ok(ScalarExpr::Column { source, ty: DataType::Str { cap } }),
                None => Err(err(arg, USAGE)),
            },
            _ => Err(err(arg, USAGE)),
        }
    }
}

/// The string read at the 8-byte, aligned field `c` (or the JOIN start's
/// column it carries), named `str(c)` (`str(c, len)` when shorter than the default).
fn user_str(c: ColumnSource, cap: u16, first: u32) -> Option<ColumnSource> {
    let call = |name: &str| match cap {
        USER_STRING_CAP => format!("str({name})"),
        _ => format!("str({name}, {})", cap - 1),
    };
    match c {
        // A `const char *` argument is read as a string already (`UserStr`); a length reads it shorter.
        ColumnSource::Field { name, offset, size: 8, kind: FieldKind::Int | FieldKind::UserStr }
            if offset % 8 == 0 && offset >= first =>
        {
            Some(ColumnSource::Field { name: call(&name), offset, size: 8, kind: FieldKind::UserStr })
        }
        ColumnSource::Start { name, column } => {
            Some(ColumnSource::Start { name: call(&name), column: Box::new(user_str(*column, cap, first)?) })
        }
        _ => None,
    }
}
