//! A JOIN whose start side is a union:
//! `FROM (SELECT rq, time FROM ev1 UNION ALL SELECT rq, time FROM ev2 WHERE …) q JOIN end e ON q.rq = e.rq`.
//!
//! A branch selects columns of its event, by name or renamed
//! (`SELECT prev.pid AS pid, time FROM sched.sched_switch`); every branch
//! yields the first one's names. The query binds against the first branch's
//! event under the union's alias, a union column standing for the column it
//! renames there (`q.pid` reads `prev.pid`, `q.pid.comm` its member); then
//! every start column it read is found under its union column and bound again
//! in each branch through that branch's own source column (same type, or a
//! positioned error), and each branch's own WHERE joins the query's start-only
//! WHERE. Every branch becomes a start program writing the one pairing map.

use super::join::and_all;
use super::{bind_event, Binder, BoundEvent, BoundJoin, ColumnSource, ScalarExpr, Side, StartBranch};
use crate::catalog::Catalog;
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EventName, Query, UnionBranch};
use crate::types::DataType;
use sqlparser::ast::{Expr, Ident};

/// Most branches in one union that run (each is a BPF program).
pub const MAX_BRANCHES: usize = 32;

/// Most branches a top-level union may be written with: branches read from
/// views its WHERE rules out by their constants attach nothing, so only
/// [`MAX_BRANCHES`] of them need to remain (the planner checks).
pub const MAX_WRITTEN_BRANCHES: usize = 64;

/// Checks the shape of a union in FROM: at most [`MAX_BRANCHES`] branches; one
/// that opens the pairs of a JOIN selects columns, plain or renamed (a
/// top-level union, [`super::union_all`], may select named expressions).
pub(super) fn check(query: &Query) -> Result<()> {
    let (Some(first), Some(last)) = (query.union.first(), query.union.last()) else { return Ok(()) };
    let span = Some(first.span.union(last.span));
    let most = if query.joins.is_empty() { MAX_WRITTEN_BRANCHES } else { MAX_BRANCHES };
    if query.union.len() > most {
        return Err(Error::query(
            Stage::Bind,
            format!("a union has at most {most} branches; this one has {}", query.union.len()),
            span,
        ));
    }
    if query.joins.is_empty() {
        return Ok(());
    }
    for branch in &query.union {
        if let Some(j) = &branch.join {
            return Err(Error::query(
                Stage::Bind,
                "the branches of a union that opens a JOIN's pairs are single events; pair inside a branch only \
                 in a union that is the whole FROM",
                Some(j.span),
            ));
        }
        for e in &branch.exprs {
            if source_path(branch, e).is_none() {
                use sqlparser::ast::Spanned;
                return Err(Error::query(
                    Stage::Bind,
                    format!(
                        "the branches of a union that opens a JOIN's pairs select columns of their event, by name \
                         or renamed (rq, prev.pid AS pid): a start program keeps columns, not computed values, and \
                         `{e}` is an expression"
                    ),
                    Span::from_sql(e.span()),
                ));
            }
        }
    }
    Ok(())
}

/// Binds every branch of `query.union` as a start event of `join`: the first
/// is `join.start` (its filter completed), the others go to `join.also`.
/// Returns whether the first attaches as `tp_btf`.
pub(super) fn bind_starts(main: &Binder, query: &Query, catalog: &Catalog, join: &mut BoundJoin) -> Result<bool> {
    let first = &query.union[0];
    let mut read: Vec<StartRead> = vec![];
    for (c, ty) in main.reads.borrow()[0].columns.iter() {
        let Some((k, members)) = union_column_of(first, c.name()) else {
            let names: Vec<&str> = first.columns.iter().map(|d| d.value.as_str()).collect();
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "`{}.{}` is not a column of the union; its branches yield {}",
                    join.start_name,
                    c.name(),
                    names.join(", ")
                ),
                Some(first.span),
            ));
        };
        read.push(StartRead { column: c.clone(), ty: *ty, union_column: k, members });
    }
    let outer = join.start_filter.take();
    let mut types: Vec<DataType> = vec![];
    let mut first_tp_btf = false;
    for (i, branch) in query.union.iter().enumerate() {
        let event = if i == 0 { join.start.clone() } else { bind_event(&branch.event, catalog)? };
        // As for a plain event (`super::bind_sides`): bound again knowing it attaches as
        // tp_btf when it reads raw arguments and a record field named like a system column.
        let (own, columns, tp_btf) = match bind_branch(&event, branch, query, &read, catalog, false, &mut types) {
            Ok(bound) => bound,
            Err(e) => bind_branch(&event, branch, query, &read, catalog, true, &mut types).map_err(|_| e)?,
        };
        let also = StartBranch { event: super::btf_args::attach_as(event, tp_btf), filter: None, columns };
        let shared = outer.clone().map(|f| f.map_columns(&|c| also.column(c)));
        let filter = and_all(own.into_iter().chain(shared).collect());
        if i == 0 {
            join.start_filter = filter;
            first_tp_btf = tp_btf;
        } else {
            join.also.push(StartBranch { filter, ..also });
        }
    }
    Ok(first_tp_btf)
}

/// A column the query read at the first branch's event, and where it comes
/// from in the union: its column `union_column`, then `members` below it
/// (`q.rq.q.disk` is column `rq`, members `q.disk`).
struct StartRead {
    column: ColumnSource,
    ty: DataType,
    union_column: usize,
    members: Vec<String>,
}

/// The column of the union that `read` (a column of the first branch's
/// event, by name) is, or is a member of; with the members below it. The
/// longest source wins (`rq.q` over `rq` when a branch yields both).
fn union_column_of(first: &UnionBranch, read: &str) -> Option<(usize, Vec<String>)> {
    let mut best: Option<(usize, usize)> = None;
    for (k, e) in first.exprs.iter().enumerate() {
        let Some(path) = source_path(first, e) else { continue };
        let source = path.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".");
        let below = read.strip_prefix(source.as_str()).filter(|rest| rest.is_empty() || rest.starts_with('.'));
        if below.is_some() && best.is_none_or(|(_, len)| source.len() > len) {
            best = Some((k, source.len()));
        }
    }
    let (k, len) = best?;
    let members = read[len..].split('.').filter(|m| !m.is_empty()).map(String::from).collect();
    Some((k, members))
}

/// The column a branch selects as `e`, as a path on its own event
/// (`rq` → `[rq]`, `prev.pid` → `[prev, pid]`), the branch's own qualifier
/// dropped (`w.pid` of `… FROM sched.sched_wakeup w` → `[pid]`); `None` for
/// an expression.
pub(super) fn source_path(branch: &UnionBranch, e: &Expr) -> Option<Vec<Ident>> {
    match e {
        Expr::Identifier(id) => Some(vec![id.clone()]),
        Expr::CompoundIdentifier(parts) => {
            let own = |q: &str| {
                branch.event.alias.as_deref() == Some(q)
                    || matches!(&branch.event.name, EventName::Tracepoint { name, .. } if name == q)
            };
            match parts.as_slice() {
                [q, rest @ ..] if own(&q.value) && !rest.is_empty() => Some(rest.to_vec()),
                parts => Some(parts.to_vec()),
            }
        }
        _ => None,
    }
}

/// The columns of the union that opens a JOIN's pairs, each with the path it
/// selects in the first branch; empty for any other query.
pub(super) fn start_columns(query: &Query) -> Vec<(String, Vec<Ident>)> {
    let Some(first) = query.union.first().filter(|_| !query.joins.is_empty()) else { return vec![] };
    let sources = first.exprs.iter().map(|e| source_path(first, e).unwrap_or_default());
    first.columns.iter().map(|c| c.value.clone()).zip(sources).collect()
}

/// A branch bound alone: its own WHERE, each start column `read` as it reads
/// it, and whether it attaches as `tp_btf`. `raw`: bind knowing it does.
type BranchColumns = (Option<ScalarExpr>, Vec<(ColumnSource, ColumnSource)>, bool);

fn bind_branch(
    event: &BoundEvent,
    branch: &UnionBranch,
    query: &Query,
    read: &[StartRead],
    catalog: &Catalog,
    raw: bool,
    types: &mut Vec<DataType>,
) -> Result<BranchColumns> {
    let b = Binder::new(vec![Side { event, alias: branch.event.alias.clone(), carried: false }], catalog.kernel())
        .knowing_raw(&[raw]);
    check_columns(&b, branch, &query.union[0], types)?;
    let own = branch.selection.as_ref().map(|e| b.condition(e, "WHERE")).transpose()?;
    let mut columns = vec![];
    for r in read {
        let source = source_path(branch, &branch.exprs[r.union_column]).expect("checked: a column");
        let path: Vec<&str> =
            source.iter().map(|p| p.value.as_str()).chain(r.members.iter().map(String::as_str)).collect();
        match b.scalar(&name_expr(&path.join(".")))? {
            ScalarExpr::Column { source, ty } if ty == r.ty => columns.push((r.column.clone(), source)),
            other => {
                return Err(Error::query(
                    Stage::Bind,
                    format!(
                        "`{}` is {} in the first branch of the union and {} in this one",
                        r.column.name(),
                        r.ty,
                        other.ty()
                    ),
                    Some(branch.span),
                ))
            }
        }
    }
    let tp_btf = b.tp_btf_sides()?[0];
    Ok((own, columns, tp_btf))
}

/// Each branch yields the first branch's columns, by name and type.
fn check_columns(b: &Binder, branch: &UnionBranch, first: &UnionBranch, types: &mut Vec<DataType>) -> Result<()> {
    if branch.columns.len() != first.columns.len() {
        return Err(Error::query(
            Stage::Bind,
            format!(
                "every branch of a union yields the same columns: the first yields {}, this one {}",
                first.columns.len(),
                branch.columns.len()
            ),
            Some(branch.span),
        ));
    }
    for (k, ((id, e), want)) in branch.columns.iter().zip(&branch.exprs).zip(&first.columns).enumerate() {
        let at = Span::from_sql(id.span);
        if id.value != want.value {
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "every branch of a union yields the same columns: expected `{}` here, found `{}`",
                    want.value, id.value
                ),
                at,
            ));
        }
        let ty = b.scalar(e)?.ty();
        match types.get(k) {
            None => types.push(ty),
            Some(t) if *t == ty => {}
            Some(t) => {
                return Err(Error::query(
                    Stage::Bind,
                    format!("`{}` is {t} in the first branch of the union and {ty} in this one", id.value),
                    at,
                ))
            }
        }
    }
    Ok(())
}

/// `rq.q.elevator` as the expression naming it.
fn name_expr(name: &str) -> Expr {
    let parts: Vec<Ident> = name.split('.').map(Ident::new).collect();
    match <[Ident; 1]>::try_from(parts) {
        Ok([one]) => Expr::Identifier(one),
        Err(parts) => Expr::CompoundIdentifier(parts),
    }
}

impl Binder<'_> {
    /// `q.name.members…` on the union that opens the pairs: the path it reads
    /// at the first branch's event (`q.pid` → `q.prev.pid`), or an error
    /// naming the union's columns; `None` for any other path.
    pub(super) fn union_start_path(&self, parts: &[Ident]) -> Option<Result<Vec<Ident>>> {
        let [q, name, members @ ..] = parts else { return None };
        let side = self.side_named(&q.value)?;
        if self.start_columns.is_empty() || !std::ptr::eq(side, &self.sides[0]) {
            return None;
        }
        let Some((_, source)) = self.start_columns.iter().find(|(c, _)| *c == name.value) else {
            let names: Vec<&str> = self.start_columns.iter().map(|(c, _)| c.as_str()).collect();
            let written: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
            let at = parts.iter().filter_map(|p| Span::from_sql(p.span)).reduce(Span::union);
            return Some(Err(Error::query(
                Stage::Bind,
                format!(
                    "`{}` is not a column of the union; its branches yield {}",
                    written.join("."),
                    names.join(", ")
                ),
                at,
            )));
        };
        Some(Ok(std::iter::once(q).chain(source).chain(members).cloned().collect()))
    }

    /// A bare name that is a renamed column of the union that opens the pairs,
    /// as `q.name` (`None` for any other name); an error when another event
    /// has a column so named too.
    pub(super) fn union_start_bare(&self, id: &Ident) -> Option<Result<ScalarExpr>> {
        let (_, source) = self.start_columns.iter().find(|(c, _)| *c == id.value)?;
        if source.len() == 1 && source[0].value == id.value {
            return None;
        }
        let q = self.sides[0].display_name();
        if let Some(other) = self.sides[1..].iter().find(|s| self.side_lookup(s, &id.value).is_some()) {
            let message = format!(
                "`{0}` is a column of both joined events; write {q}.{0} or {1}.{0}",
                id.value,
                other.display_name()
            );
            return Some(Err(Error::query(Stage::Bind, message, Span::from_sql(id.span))));
        }
        let parts = [Ident::new(q), id.clone()];
        let path = self.union_start_path(&parts)?;
        Some(path.and_then(|path| self.union_start_column(&parts, &path, &Expr::Identifier(id.clone()))))
    }

    /// Binds `path` (a union column as the first branch reads it) and names the
    /// carried column as written (`q.pid`, not `q.prev.pid`): each branch reads its own.
    pub(super) fn union_start_column(&self, written: &[Ident], path: &[Ident], e: &Expr) -> Result<ScalarExpr> {
        let bound = self.path_or_column(path, e)?;
        let name = written.iter().map(|p| p.value.as_str()).collect::<Vec<_>>().join(".");
        Ok(match bound {
            ScalarExpr::Column { source: ColumnSource::Start { column, .. }, ty } => {
                ScalarExpr::Column { source: ColumnSource::Start { name, column }, ty }
            }
            other => other,
        })
    }
}
