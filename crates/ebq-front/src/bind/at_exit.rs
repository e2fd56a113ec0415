//! `str_at_exit(ptr[, len])`: a system call's string argument read when the
//! call returns, not at its entry (issue 40 item 6).
//!
//! At a system call's entry the kernel has not touched the caller's string:
//! a path in a page not resident yet cannot be read there (NULL, counted).
//! By the exit the call has faulted the page in. A query over one
//! `syscalls.sys_enter_NAME` event that calls `str_at_exit()` is bound as the
//! JOIN form that reads there: the entry paired with `sys_exit_NAME` on the
//! thread, the row emitted at the exit.
//!
//! ```text
//! SELECT comm, str_at_exit(filename) FROM syscalls.sys_enter_openat WHERE comm = 'ls'
//!
//! Filter  sys_enter_openat.comm = 'ls' (before a pair opens)
//! Pair    on [sys_enter_openat.tid = sys_exit_openat.tid] …; carries [sys_enter_openat.comm,
//!         str_at_exit(filename) (its pointer; read at the end event)]
//! Attach  tracepoint:syscalls:sys_exit_openat (closes pairs)
//! ```
//!
//! Every other column is the entry's, carried in the pair (`time` is the
//! entry's time; a plain `filename` is read at the entry, NULL there as
//! before); only the strings `str_at_exit()` reads have their pointers
//! carried and read at the exit ([`crate::plan::Pairing::reads_at_end`]).
//! WHERE conditions without `str_at_exit()` are checked at the entry, before
//! a pair opens; those with it, at the exit. A call that has not returned
//! when the query stops is a pair left open, counted on the stats line.

use super::expr::{err, span_of};
use super::join::{and_all, conjuncts, uncarry};
use super::{bind_event, Binder, BoundEvent, BoundJoin, ColumnSource, ScalarExpr, USER_STRING_CAP};
use crate::catalog::{Catalog, FieldKind, SystemColumn};
use crate::error::{Error, QueryError, Result, Span, Stage};
use crate::parse::{EventName, EventRef, Expr, Query};
use crate::types::DataType;
use sqlparser::ast::{Function, FunctionArgExpr};
use std::ops::ControlFlow;

/// The function's name, lower case.
pub(super) const NAME: &str = "str_at_exit";

const USAGE: &str = "str_at_exit(ptr[, len]) reads the string at a pointer argument of the system call \
                     (`filename`, `buf`) when the call returns, with an optional length 1..127";

/// Is `f` a call of `str_at_exit`?
fn is_call(f: &Function) -> bool {
    f.name.to_string().eq_ignore_ascii_case(NAME)
}

/// The first `str_at_exit(…)` call in the query's clauses (and a union's
/// branches), if any.
pub(super) fn first_call(query: &Query) -> Option<Expr> {
    let look = |e: &Expr| match e {
        Expr::Function(f) if is_call(f) => ControlFlow::Break(e.clone()),
        _ => ControlFlow::Continue(()),
    };
    let mut exprs: Vec<&Expr> = query.selection.iter().chain(&query.group_by).chain(&query.having).collect();
    exprs.extend(query.order_by.iter().map(|o| &o.expr));
    exprs.extend(query.joins.iter().map(|j| &j.on));
    for b in &query.union {
        exprs.extend(b.exprs.iter().chain(&b.selection));
    }
    if let ControlFlow::Break(call) = sqlparser::ast::visit_expressions(&query.projection, look) {
        return Some(call);
    }
    exprs.into_iter().find_map(|e| match sqlparser::ast::visit_expressions(e, look) {
        ControlFlow::Break(call) => Some(call),
        ControlFlow::Continue(()) => None,
    })
}

/// For a query over one event that calls `str_at_exit()`: the exit event of
/// its system call, to pair the entry with. `None` when it calls none. An
/// error, at the first call, when FROM is not a system call's entry, or is
/// execve's (a successful execve replaces the memory the pointer points into).
/// With the exit event, the call's span (the pairing's, for plan errors).
pub(super) fn exit_event(query: &Query, catalog: &Catalog) -> Result<Option<(BoundEvent, Span)>> {
    let Some(call) = first_call(query) else { return Ok(None) };
    let Expr::Function(f) = &call else { unreachable!("first_call finds calls") };
    let event = match &query.from.name {
        EventName::Tracepoint { category, name } => format!("{category}.{name}"),
        other => other.to_string(),
    };
    // The same call read at the event, `str(filename)`: the fix puts `str` for the name.
    let text = call.to_string();
    let at_event = format!("str{}", &text[text.find('(').unwrap_or(text.len())..]);
    let refuse = |message: String, help: &str| {
        Error::Query(
            QueryError::new(Stage::Bind, message, span_of(&f.name))
                .with_help(format!("{help}: {at_event}"))
                .with_fix("str"),
        )
    };
    let entry_of = match &query.from.name {
        EventName::Tracepoint { category, name } if category == "syscalls" => name.strip_prefix("sys_enter_"),
        _ => None,
    };
    match entry_of {
        None => Err(refuse(
            format!(
                "{NAME}() reads a string when a system call returns: FROM must be a system call's entry \
                 (syscalls.sys_enter_NAME), and `{event}` is not one"
            ),
            "str() reads it at the event",
        )),
        Some(sys @ ("execve" | "execveat")) => Err(refuse(
            format!(
                "{NAME}() cannot read at {sys}'s exit: a successful {sys} replaces the process's memory, \
                 so the pointer means nothing when it returns"
            ),
            "str() reads it at the entry",
        )),
        Some(sys) => {
            let exit = EventName::Tracepoint { category: "syscalls".into(), name: format!("sys_exit_{sys}") };
            let exit = EventRef { name: exit, alias: None, span: query.from.span };
            let span = span_of(&call).unwrap_or(query.from.span);
            match bind_event(&exit, catalog) {
                Ok(bound) => Ok(Some((bound, span))),
                Err(_) => Err(refuse(
                    format!("{NAME}() reads at {sys}'s exit, and this kernel has no {}", exit.name),
                    "str() reads it at the entry",
                )),
            }
        }
    }
}

impl Binder<'_> {
    /// Binds `str_at_exit(…)` with arguments `args` (`e` is the whole call):
    /// the carried pointer argument, read at the end event.
    pub(super) fn string_at_exit(&self, e: &Expr, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
        let Some(read) = &self.at_exit else { return Err(self.outside_one_entry(e)) };
        let (arg, cap) = super::user_str::str_args(e, args, USAGE, NAME)?;
        let pointer = self.scalar(arg)?;
        let field = match &pointer {
            ScalarExpr::Column { source: ColumnSource::Start { column, .. }, .. } => match &**column {
                ColumnSource::Field { name, offset, size: 8, kind: FieldKind::Int | FieldKind::UserStr } => {
                    self.sides[0].format().field(name).filter(|f| f.c_type.contains('*')).map(|_| (name, *offset))
                }
                _ => None,
            },
            _ => None,
        };
        let Some((name, offset)) = field else {
            return Err(err(arg, format!("{}; {USAGE}", self.not_a_pointer(arg, &pointer))));
        };
        let call = match cap {
            USER_STRING_CAP => format!("{NAME}({name})"),
            _ => format!("{NAME}({name}, {})", cap - 1),
        };
        let column = ColumnSource::Field { name: call.clone(), offset, size: 8, kind: FieldKind::UserStr };
        let source = ColumnSource::Start { name: call, column: Box::new(column) };
        if !read.borrow().contains(&source) {
            read.borrow_mut().push(source.clone());
        }
        Ok(ScalarExpr::Column { source, ty: DataType::Str { cap } })
    }

    /// What `arg` (bound as `bound`) is, when it is not a pointer argument.
    fn not_a_pointer(&self, arg: &Expr, bound: &ScalarExpr) -> String {
        let field = match bound {
            ScalarExpr::Column { source, .. } => match source.read_at_start() {
                ColumnSource::Field { name, .. } => self.sides[0].format().field(name),
                _ => None,
            },
            _ => None,
        };
        match field {
            Some(f) => format!("`{arg}` is declared `{}`, not a pointer", f.c_type),
            None => format!("`{arg}` ({}) is not a pointer argument of the system call", bound.ty()),
        }
    }

    /// The refusal of `str_at_exit()` where it cannot pair an entry with its
    /// exit: in a JOIN (which reads the start's strings at the end already
    /// when it pairs a system call's entry and exit on `tid`), or elsewhere.
    fn outside_one_entry(&self, e: &Expr) -> Error {
        if self.sides.len() < 2 {
            return err(
                e,
                format!("{NAME}() works in a query over one syscalls.sys_enter_* event, not in a UNION ALL or a join of two streams"),
            );
        }
        let Expr::Function(f) = e else { return err(e, USAGE) };
        let text = e.to_string();
        let at_event = format!("str{}", &text[text.find('(').unwrap_or(text.len())..]);
        let q = QueryError::new(
            Stage::Bind,
            format!(
                "{NAME}() pairs a system call's entry with its exit itself; a JOIN that pairs them on `tid` \
                 reads the start's user strings at the end event already"
            ),
            span_of(&f.name),
        );
        Error::Query(q.with_help(format!("read it as the JOIN does: {at_event}")).with_fix("str"))
    }

    /// The query's entry (side 0) paired with its system call's `exit` on
    /// the thread, and what is left of `filter` for the end event: the
    /// conditions that read a `str_at_exit()` string; the others are the
    /// start filter, checked before a pair opens.
    pub(super) fn at_exit_join(
        &self,
        exit: &BoundEvent,
        filter: Option<ScalarExpr>,
        span: Span,
    ) -> (BoundJoin, Option<ScalarExpr>) {
        let read = self.at_exit.as_ref().map(|r| r.borrow().clone()).unwrap_or_default();
        let at_exit = |c: &ScalarExpr| {
            let mut cols = vec![];
            c.typed_columns(&mut cols);
            cols.iter().any(|(c, _)| read.contains(c))
        };
        let (end, start): (Vec<_>, Vec<_>) = filter.map(conjuncts).unwrap_or_default().into_iter().partition(at_exit);
        let tid =
            ScalarExpr::Column { source: ColumnSource::System(SystemColumn::Tid), ty: SystemColumn::Tid.data_type() };
        let entry = &self.sides[0];
        let join = BoundJoin {
            start: entry.event.clone(),
            start_name: entry.display_name(),
            end_name: match &exit.name {
                EventName::Tracepoint { name, .. } => name.clone(),
                other => other.to_string(),
            },
            // Compared as 64 bits, as `ON e.tid = x.tid` compares them: a key without padding.
            keys: vec![(tid.clone(), tid, DataType::U64)],
            start_filter: and_all(start.into_iter().map(uncarry).collect()),
            also: vec![],
            middle: None,
            str_at_exit: Some(read),
            span,
        };
        (join, and_all(end))
    }
}
