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
//! integer literal takes its column's type, anything else must match exactly
//! (a string's capacity included, since every branch writes the same field).

use super::{bind_event, Binder, ColumnSource, LogicalPlan, ScalarExpr, Side, UnionInput};
use crate::catalog::{Catalog, SystemColumn};
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EventRef, Query, UnionBranch};
use crate::types::DataType;
use sqlparser::ast::Spanned;

/// Binds `query`, whose FROM is a union with no JOIN.
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

/// One branch against its own event: its columns' expressions and its WHERE.
fn bind_branch(branch: &UnionBranch, catalog: &Catalog) -> Result<UnionInput> {
    let event = bind_event(&branch.event, catalog)?;
    let b =
        Binder::new(vec![Side { event: &event, alias: branch.event.alias.clone(), carried: false }], catalog.kernel());
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
    let filter = branch.selection.as_ref().map(|e| b.condition(e, "WHERE")).transpose()?;
    let tp_btf = b.tp_btf_sides()?[0];
    drop(b);
    Ok(UnionInput { event: super::btf_args::attach_as(event, tp_btf), filter, columns })
}

/// Each column's type: that of its first branch that is not an integer
/// literal (the literals then take it); a positioned error naming the branch
/// and the column when two branches disagree.
fn unify(branches: &[UnionBranch], inputs: &mut [UnionInput]) -> Result<Vec<DataType>> {
    let mut types = vec![];
    for (k, name) in branches[0].columns.iter().enumerate() {
        let literal = |e: &ScalarExpr| matches!(e, ScalarExpr::Int { .. });
        let typed = inputs.iter().position(|b| !literal(&b.columns[k])).unwrap_or(0);
        let ty = inputs[typed].columns[k].ty();
        for (i, input) in inputs.iter_mut().enumerate() {
            let at = Span::from_sql(branches[i].exprs[k].span());
            match &mut input.columns[k] {
                ScalarExpr::Int { ty: t, .. } if ty.is_int() => *t = ty,
                e if e.ty() == ty => {}
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
