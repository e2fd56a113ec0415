//! SELECT aliases in HAVING and WHERE: a name that is no column of the events
//! but a SELECT alias stands for the aliased expression, as it does in GROUP BY
//! and ORDER BY.
//!
//! ```text
//! SELECT comm, COUNT(*) AS n … HAVING n > 10          →  … HAVING COUNT(*) > 10
//! SELECT (x.time - e.time) / 1000 AS us … WHERE us > 200  →  … WHERE ((x.time - e.time) / 1000) > 200
//! SELECT comm, COUNT(*) AS n … WHERE n > 10           →  error: WHERE runs per event, before aggregation
//! ```
//!
//! An aggregate alias cannot appear in WHERE: WHERE decides, per event and in
//! the kernel, whether the event is counted at all, before any aggregate has
//! a value.

use super::expr::{contains_aggregate, span_of};
use crate::error::{Error, QueryError, Result, Stage};
use crate::parse::{Expr, SelectItem};
use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments, Ident};
use std::borrow::Cow;

/// The clause an expression comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Clause {
    /// Per event, in the kernel: aggregate aliases are refused.
    Where,
    /// Per group, after aggregation: any alias.
    Having,
}

/// `e` with every SELECT alias that `is_column` does not claim replaced by
/// its expression (in parentheses). Borrowed when no alias is used, and when
/// `e` is nested deeper than the binder accepts (it refuses it with its own
/// message): long operator chains are never copied or walked to the end.
pub(super) fn resolve<'e>(
    e: &'e Expr,
    projection: &[SelectItem],
    is_column: &dyn Fn(&str) -> bool,
    clause: Clause,
) -> Result<Cow<'e, Expr>> {
    let uses_alias = |id: &Ident| !is_column(&id.value) && aliased(projection, id).is_some();
    match any_identifier(e, &uses_alias, super::MAX_EXPR_DEPTH) {
        Some(true) => substitute(e, projection, is_column, clause).map(Cow::Owned),
        Some(false) | None => Ok(Cow::Borrowed(e)),
    }
}

/// Whether an identifier in `e` satisfies `test` (the variants [`substitute`]
/// rewrites); `None` when `e` is nested deeper than `depth`.
fn any_identifier(e: &Expr, test: &dyn Fn(&Ident) -> bool, depth: u32) -> Option<bool> {
    let depth = depth.checked_sub(1)?;
    let any = |xs: &[&Expr]| -> Option<bool> {
        let mut found = false;
        for x in xs {
            found |= any_identifier(x, test, depth)?;
        }
        Some(found)
    };
    match e {
        Expr::Identifier(id) => Some(test(id)),
        Expr::BinaryOp { left, right, .. } => any(&[left, right]),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) | Expr::InList { expr, .. } => any(&[expr]),
        Expr::Between { expr, low, high, .. } => any(&[expr, low, high]),
        Expr::Function(f) => match &f.args {
            FunctionArguments::List(list) => any(&list
                .args
                .iter()
                .filter_map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) => Some(x),
                    _ => None,
                })
                .collect::<Vec<_>>()),
            _ => Some(false),
        },
        _ => Some(false),
    }
}

/// The rewrite of [`resolve`], on expressions known to be shallow.
fn substitute(e: &Expr, projection: &[SelectItem], is_column: &dyn Fn(&str) -> bool, clause: Clause) -> Result<Expr> {
    let again = |x: &Expr| substitute(x, projection, is_column, clause).map(Box::new);
    Ok(match e {
        Expr::Identifier(id) if !is_column(&id.value) => match aliased(projection, id) {
            Some(x) if clause == Clause::Where && contains_aggregate(x) => return Err(aggregate_in_where(e, id, x)),
            Some(x) => Expr::Nested(Box::new(x.clone())),
            None => e.clone(),
        },
        Expr::BinaryOp { left, op, right } => {
            Expr::BinaryOp { left: again(left)?, op: op.clone(), right: again(right)? }
        }
        Expr::UnaryOp { op, expr } => Expr::UnaryOp { op: *op, expr: again(expr)? },
        Expr::Nested(inner) => Expr::Nested(again(inner)?),
        Expr::Between { expr, negated, low, high } => {
            Expr::Between { expr: again(expr)?, negated: *negated, low: again(low)?, high: again(high)? }
        }
        Expr::InList { expr, list, negated } => {
            Expr::InList { expr: again(expr)?, list: list.clone(), negated: *negated }
        }
        Expr::Function(f) => {
            let mut f = f.clone();
            if let FunctionArguments::List(list) = &mut f.args {
                for a in &mut list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(x)) = a {
                        *x = substitute(x, projection, is_column, clause)?;
                    }
                }
            }
            Expr::Function(f)
        }
        other => other.clone(),
    })
}

/// The expression the SELECT list names `id`.
fn aliased<'a>(projection: &'a [SelectItem], id: &Ident) -> Option<&'a Expr> {
    projection.iter().find_map(|item| match item {
        SelectItem::ExprWithAlias { expr, alias } if alias.value == id.value => Some(expr),
        _ => None,
    })
}

fn aggregate_in_where(e: &Expr, id: &Ident, aggregate: &Expr) -> Error {
    Error::Query(
        QueryError::new(
            Stage::Bind,
            format!(
                "`{id}` is `{aggregate}`, an aggregate: WHERE runs per event in the kernel, before anything is aggregated"
            ),
            span_of(e),
        )
        .with_help(format!("move the condition on `{id}` to HAVING, which filters the groups after aggregation")),
    )
}
