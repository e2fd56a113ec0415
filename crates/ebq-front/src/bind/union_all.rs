//! A top-level union: several events feeding one result.
//!
//! ```text
//! SELECT k, COUNT(*), SUM(n) FROM (SELECT 0 AS k, count AS n FROM ev1 WHERE …
//!                                  UNION ALL SELECT 1 AS k, ret AS n FROM ev2) u GROUP BY k
//! ```
//!
//! Each branch binds against its own event: its WHERE and the expression of
//! each column. The outer query binds once, against the union's columns (as
//! [`ColumnSource::Union`] stand-ins) and the system columns every event has,
//! so the aggregate layout, the user plan and the output names are one for
//! all branches; the planner then gives each branch a program in which the
//! stand-ins read that branch's expressions. Column types must agree: an
//! integer literal takes its column's type, a string constant its column's
//! capacity (when it fits), anything else must match exactly (a string's
//! capacity included, since every branch writes the same field).
//!
//! A branch may pair two events (`SELECT … FROM a s JOIN b e ON s.k = e.k`),
//! bound as a JOIN query is ([`super::join`]): its columns may read both
//! sides, and the planner gives it a start program and a pairing map of its
//! own beside its end program. So one view can hold the system calls (enter
//! ⋈ exit) and io_uring's requests (submit ⋈ complete) together.

use super::btf_args::attach_as;
use super::{bind_event, Binder, BoundEvent, ColumnSource, LogicalPlan, ScalarExpr, Side, UnionInput};
use crate::catalog::{Catalog, SystemColumn};
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EventRef, Query, UnionBranch};
use crate::types::DataType;
use sqlparser::ast::Spanned;

/// Binds `query`, whose FROM is a union with no JOIN after it (a branch
/// may pair two events of its own).
pub(super) fn bind_union(query: &Query, catalog: &Catalog) -> Result<LogicalPlan> {
    let first = &query.union[0];
    let mut inputs = vec![];
    for (i, branch) in query.union.iter().enumerate() {
        check_names(branch, first, i)?;
        inputs.push(bind_branch(branch, catalog)?);
    }
    let types = unify(&query.union, &mut inputs)?;
    let columns: Vec<(String, DataType)> = first.columns.iter().map(|c| c.value.clone()).zip(types).collect();
    let outer = Query {
        from: EventRef { name: first.event.name.clone(), alias: query.from.alias.clone(), span: first.event.span },
        union: vec![],
        ..query.clone()
    };
    let mut plan = super::bind_events(&outer, catalog, &columns)?;
    plan.event = inputs[0].event.clone();
    plan.union = inputs;
    Ok(plan)
}

/// A union column or a system column, as the outer query reads it.
pub(super) fn lookup(columns: &[(String, DataType)], name: &str) -> Option<ScalarExpr> {
    if let Some(index) = columns.iter().position(|(c, _)| c == name) {
        let (name, ty) = columns[index].clone();
        return Some(ScalarExpr::Column { source: ColumnSource::Union { name, index }, ty });
    }
    SystemColumn::from_name(name).map(|s| ScalarExpr::Column { source: ColumnSource::System(s), ty: s.data_type() })
}

/// Every branch yields the first one's columns, by name, in order.
fn check_names(branch: &UnionBranch, first: &UnionBranch, i: usize) -> Result<()> {
    if branch.columns.len() != first.columns.len() {
        return Err(Error::query(
            Stage::Bind,
            format!(
                "every branch of a union yields the same columns: branch 1 yields {}, branch {} yields {}",
                first.columns.len(),
                i + 1,
                branch.columns.len()
            ),
            Some(branch.span),
        ));
    }
    for (id, want) in branch.columns.iter().zip(&first.columns) {
        if id.value != want.value {
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "every branch of a union yields the same columns: branch {} names `{}` where branch 1 names `{}`",
                    i + 1,
                    id.value,
                    want.value
                ),
                Span::from_sql(id.span),
            ));
        }
    }
    Ok(())
}

/// One branch against its own event (or its own start and end events): its
/// columns' expressions, its WHERE and, for a JOIN, its pairing. As for a
/// plain query ([`super::bind_sides`]), a side that reads raw arguments and a
/// record field named like a system column is bound again knowing it
/// attaches as `tp_btf`.
fn bind_branch(branch: &UnionBranch, catalog: &Catalog) -> Result<UnionInput> {
    let start = bind_event(&branch.event, catalog)?;
    let end = branch.join.as_ref().map(|j| bind_event(&j.event, catalog)).transpose()?;
    bind_branch_sides(branch, catalog, start, end, &[])
}

fn bind_branch_sides(
    branch: &UnionBranch,
    catalog: &Catalog,
    start: BoundEvent,
    end: Option<BoundEvent>,
    raw: &[bool],
) -> Result<UnionInput> {
    let first = Side { event: &start, alias: branch.event.alias.clone(), carried: end.is_some() };
    let sides = match (&end, &branch.join) {
        (Some(e), Some(j)) => vec![first, Side { event: e, alias: j.event.alias.clone(), carried: false }],
        _ => vec![first],
    };
    let b = Binder::new(sides, catalog.kernel()).knowing_raw(raw);
    let mut columns = vec![];
    for e in &branch.exprs {
        if super::expr::contains_aggregate(e) {
            return Err(Error::query(
                Stage::Bind,
                "a branch of a union yields one value per event; aggregate in the outer query",
                Span::from_sql(e.span()),
            ));
        }
        columns.push(b.scalar(e)?);
    }
    let mut filter = branch.selection.as_ref().map(|e| b.condition(e, "WHERE")).transpose()?;
    let join = match &branch.join {
        Some(j) => {
            let (bound, rest) = super::join::bind_join(&b, j, &mut filter)?;
            filter = rest;
            Some(bound)
        }
        None => None,
    };
    let tp_btf = match b.tp_btf_sides() {
        Err(_) if raw.is_empty() && b.raw_readers().contains(&true) => {
            let readers = b.raw_readers();
            drop(b);
            return bind_branch_sides(branch, catalog, start, end, &readers);
        }
        other => other?,
    };
    drop(b);
    Ok(match (end, join) {
        (Some(end), Some(mut join)) => {
            join.start = attach_as(join.start, tp_btf[0]);
            UnionInput { event: attach_as(end, tp_btf[1]), filter, columns, join: Some(join) }
        }
        _ => UnionInput { event: attach_as(start, tp_btf[0]), filter, columns, join: None },
    })
}

/// Each column's type: that of its first branch that is not an integer
/// literal (the literals then take it). Integers of different widths or
/// signedness widen to one type that holds them all, as SQL's UNION does (a
/// narrower branch's value is converted with a [`ScalarExpr::Cast`]);
/// anything else that differs is a positioned error naming the branch and
/// the column.
fn unify(branches: &[UnionBranch], inputs: &mut [UnionInput]) -> Result<Vec<DataType>> {
    let mut types = vec![];
    for (k, name) in branches[0].columns.iter().enumerate() {
        let literal = |e: &ScalarExpr| matches!(e, ScalarExpr::Int { .. }) || e.is_const_str();
        let typed = inputs.iter().position(|b| !literal(&b.columns[k])).unwrap_or(0);
        let mut ty = inputs[typed].columns[k].ty();
        if ty.is_int() {
            for input in inputs.iter().filter(|b| !literal(&b.columns[k])) {
                ty = wider(ty, input.columns[k].ty());
            }
        }
        // String constants take the column's capacity: the longest constant's
        // when no branch reads a string column there.
        if inputs.iter().all(|b| b.columns[k].is_const_str()) {
            let cap = inputs.iter().filter_map(|b| b.columns[k].ty().string_cap()).max().unwrap_or(1);
            ty = DataType::Str { cap };
        }
        for (i, input) in inputs.iter_mut().enumerate() {
            let at = Span::from_sql(branches[i].exprs[k].span());
            match &mut input.columns[k] {
                ScalarExpr::Int { ty: t, .. } if ty.is_int() => *t = ty,
                e if e.ty() == ty => {}
                e if e.is_const_str() && e.ty().string_cap() <= ty.string_cap() => {
                    *e = e.clone().with_str_cap(ty.string_cap().expect("a string column"))
                }
                e if e.ty().is_int() && ty.is_int() => *e = ScalarExpr::Cast { expr: Box::new(e.clone()), ty },
                e => {
                    return Err(Error::query(
                        Stage::Bind,
                        format!(
                            "column `{}` of the union is {ty} in branch {} and {} in branch {}: every branch must yield the same type",
                            name.value,
                            typed + 1,
                            e.ty(),
                            i + 1
                        ),
                        at,
                    ))
                }
            }
        }
        types.push(ty);
    }
    Ok(types)
}

/// The integer type holding every value of `a` and of `b` (signed when
/// either is; as wide as the wider, one step wider when an unsigned one must
/// fit a signed type, up to 64 bits). Non-integers are returned as `a`.
fn wider(a: DataType, b: DataType) -> DataType {
    let (DataType::Int { bits: x, signed: sx }, DataType::Int { bits: y, signed: sy }) = (a, b) else { return a };
    let signed = sx || sy;
    let need = |bits: u8, s: bool| if signed && !s { (bits * 2).min(64) } else { bits };
    DataType::Int { bits: need(x, sx).max(need(y, sy)), signed }
}
