//! A JOIN whose start side is a union:
//! `FROM (SELECT rq, time FROM ev1 UNION ALL SELECT rq, time FROM ev2 WHERE …) q JOIN end e ON q.rq = e.rq`.
//!
//! The query binds against the first branch's event under the union's alias;
//! then every start column it read is bound again by name in each branch (same
//! type, or a positioned error), and each branch's own WHERE joins the query's
//! start-only WHERE. Every branch becomes a start program writing the one
//! pairing map.

use super::join::and_all;
use super::{bind_event, Binder, BoundEvent, BoundJoin, ColumnSource, ScalarExpr, Side, StartBranch};
use crate::catalog::Catalog;
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{Query, UnionBranch};
use crate::types::DataType;
use sqlparser::ast::{Expr, Ident};

/// Most branches in one union (each is a BPF program).
pub const MAX_BRANCHES: usize = 16;

/// Checks the shape of a union in FROM: at most [`MAX_BRANCHES`] branches; one
/// that opens the pairs of a JOIN selects plain columns (a top-level union,
/// [`super::union_all`], may select named expressions).
pub(super) fn check(query: &Query) -> Result<()> {
    let (Some(first), Some(last)) = (query.union.first(), query.union.last()) else { return Ok(()) };
    let span = Some(first.span.union(last.span));
    if query.union.len() > MAX_BRANCHES {
        return Err(Error::query(
            Stage::Bind,
            format!("a union has at most {MAX_BRANCHES} branches; this one has {}", query.union.len()),
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
        for (e, name) in branch.exprs.iter().zip(&branch.columns) {
            if !matches!(e, Expr::Identifier(id) if id.value == name.value) {
                use sqlparser::ast::Spanned;
                return Err(Error::query(
                    Stage::Bind,
                    "the branches of a union that opens a JOIN's pairs select plain columns by name (rq, time)",
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
    let read = main.reads.borrow()[0].columns.clone();
    let declared = &query.union[0].columns;
    for (c, _) in &read {
        let root = c.name().split('.').next().unwrap_or_default();
        if !declared.iter().any(|d| d.value == root) {
            let names: Vec<&str> = declared.iter().map(|d| d.value.as_str()).collect();
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "`{}.{}` is not a column of the union; its branches yield {}",
                    join.start_name,
                    c.name(),
                    names.join(", ")
                ),
                Some(query.union[0].span),
            ));
        }
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

/// A branch bound alone: its own WHERE, each start column `read` as it reads
/// it, and whether it attaches as `tp_btf`. `raw`: bind knowing it does.
type BranchColumns = (Option<ScalarExpr>, Vec<(ColumnSource, ColumnSource)>, bool);

fn bind_branch(
    event: &BoundEvent,
    branch: &UnionBranch,
    query: &Query,
    read: &[(ColumnSource, DataType)],
    catalog: &Catalog,
    raw: bool,
    types: &mut Vec<DataType>,
) -> Result<BranchColumns> {
    let b = Binder::new(vec![Side { event, alias: branch.event.alias.clone(), carried: false }], catalog.kernel())
        .knowing_raw(&[raw]);
    check_columns(&b, branch, &query.union[0], types)?;
    let own = branch.selection.as_ref().map(|e| b.condition(e, "WHERE")).transpose()?;
    let mut columns = vec![];
    for (c, ty) in read {
        let bound = b.scalar(&name_expr(c.name()))?;
        match bound {
            ScalarExpr::Column { source, ty: t } if t == *ty => columns.push((c.clone(), source)),
            other => {
                return Err(Error::query(
                    Stage::Bind,
                    format!("`{}` is {} in the first branch of the union and {} in this one", c.name(), ty, other.ty()),
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
    for (k, (id, want)) in branch.columns.iter().zip(&first.columns).enumerate() {
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
        let ty = b.scalar(&Expr::Identifier(id.clone()))?.ty();
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
