//! Binding `APPROX_TOP_K(x, k [, weight])`: one SELECT item that becomes three output
//! columns (`key` or its alias, `estimate`, `error_bound`) over three
//! aggregates sharing one sketch (see [`crate::topk`]). The planner expands
//! the sketch into `k` rows per window.
//!
//! The sketch is one per query: with GROUP BY it would be one per group
//! (24 KiB each, per CPU), and beside other aggregates a row would mix one
//! group's values with `k` keys', so both are refused here, with positions.

use super::expr::{contains_aggregate, err, function_args};
use super::{AggCall, AggFunc, Binder, GroupExpr, GroupRef, OutputColumn, PostExpr, TopKPart};
use crate::error::Result;
use crate::parse::SelectItem;
use crate::parse::{Expr, Query};
use sqlparser::ast::{DuplicateTreatment, Function, FunctionArgExpr, FunctionArguments};

/// The function's name, upper-cased.
pub(super) const NAME: &str = "APPROX_TOP_K";

/// True when `e` is an `APPROX_TOP_K(…)` call.
pub(super) fn is_top_k(e: &Expr) -> bool {
    matches!(e, Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case(NAME))
}

/// The error for an `APPROX_TOP_K` anywhere but a SELECT item of its own.
pub(super) fn misplaced(e: &Expr) -> crate::error::Error {
    err(
        e,
        "APPROX_TOP_K must be a SELECT item of its own (it returns k rows); \
         ORDER BY and HAVING name its columns: key, estimate, error_bound",
    )
}

impl Binder<'_> {
    /// Binds the query's only SELECT item, `APPROX_TOP_K(x, k [, w])` (aliased
    /// `alias`), to its three columns; its aggregates are appended to `aggs`.
    pub(super) fn top_k_columns(
        &self,
        q: &Query,
        e: &Expr,
        alias: Option<&str>,
        aggs: &mut Vec<AggCall>,
    ) -> Result<Vec<OutputColumn<GroupExpr>>> {
        let Expr::Function(f) = e else { unreachable!("is_top_k checked the call") };
        if let Some(g) = q.group_by.first() {
            return Err(err(
                g,
                "APPROX_TOP_K cannot be used with GROUP BY: its sketch is one per query \
                 (filter with WHERE, or run one query per group)",
            ));
        }
        if let Some(other) = q.projection.iter().find(|item| !item_is(item, e)) {
            return Err(err(
                other,
                "APPROX_TOP_K must be the only SELECT item: it returns k rows of its own (key, estimate, error_bound)",
            ));
        }
        let (arg, k, weight) = self.top_k_args(e, f)?;
        let mut columns = vec![];
        for (part, name) in [
            (TopKPart::Key, alias.unwrap_or("key")),
            (TopKPart::Estimate, "estimate"),
            (TopKPart::ErrorBound, "error_bound"),
        ] {
            let call =
                AggCall { func: AggFunc::ApproxTopK { k, part }, arg: Some(arg.clone()), weight: weight.clone() };
            let ty = call.ty();
            aggs.push(call);
            let source = PostExpr::Ref(GroupRef::Agg { index: aggs.len() - 1, ty });
            columns.push(OutputColumn { name: name.to_string(), ty, source });
        }
        Ok(columns)
    }

    /// (key expression, k, weight) of a call: an integer key, a literal k in
    /// 1..=[`crate::topk::MAX_K`], and an optional unsigned integer weight.
    fn top_k_args(&self, e: &Expr, f: &Function) -> Result<TopKArgs> {
        if let FunctionArguments::List(list) = &f.args {
            if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)) {
                return Err(err(e, "APPROX_TOP_K(DISTINCT …) is not supported"));
            }
        }
        if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
            return Err(err(e, "APPROX_TOP_K takes no OVER, FILTER or WITHIN GROUP; use WINDOW(…) for windows"));
        }
        let args = function_args(f);
        let exprs: Vec<&Expr> =
            args.iter().filter_map(|a| if let FunctionArgExpr::Expr(x) = a { Some(x) } else { None }).collect();
        let (x, k, weight) = match exprs.as_slice() {
            [x, k] if args.len() == 2 => (*x, *k, None),
            [x, k, w] if args.len() == 3 => (*x, *k, Some(*w)),
            _ => return Err(err(e, USAGE)),
        };
        if contains_aggregate(x) {
            return Err(err(x, "aggregates cannot be nested"));
        }
        let arg = self.scalar(x)?;
        if !arg.ty().is_int() {
            return Err(err(x, format!("APPROX_TOP_K needs an integer key; `{x}` is {}", arg.ty())));
        }
        let n = super::hist::int_literal(k, "APPROX_TOP_K's k")?;
        let max = crate::topk::MAX_K;
        if !(1..=max as i64).contains(&n) {
            return Err(err(k, format!("APPROX_TOP_K's k must be in 1..={max}; got {n}")));
        }
        let weight = weight.map(|w| self.top_k_weight(w)).transpose()?;
        Ok((arg, n as u16, weight))
    }

    /// The weight each event adds to its key's counters: an unsigned integer
    /// (a negative weight would break the bound: estimates could fall below the truth).
    fn top_k_weight(&self, w: &Expr) -> Result<super::ScalarExpr> {
        if contains_aggregate(w) {
            return Err(err(w, "aggregates cannot be nested"));
        }
        let weight = self.scalar(w)?;
        let ty = weight.ty();
        if !ty.is_int() {
            return Err(err(w, format!("APPROX_TOP_K's weight must be an unsigned integer; `{w}` is {ty}")));
        }
        if ty.is_signed() {
            return Err(err(
                w,
                format!(
                    "APPROX_TOP_K's weight must be an unsigned integer; `{w}` is {ty} and can be negative \
                     (filter negatives out with WHERE and CAST it to u64)"
                ),
            ));
        }
        Ok(weight)
    }
}

/// The usage an ill-formed call is told.
const USAGE: &str = "APPROX_TOP_K takes (expr, k) or (expr, k, weight): an integer key, \
                     how many keys to report, and an unsigned integer each event adds (default 1)";

/// A call's key expression, k, and weight.
type TopKArgs = (super::ScalarExpr, u16, Option<super::ScalarExpr>);

/// True when `item` is the SELECT item whose expression is `e`.
fn item_is(item: &SelectItem, e: &Expr) -> bool {
    match item {
        SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. } => std::ptr::eq(x, e),
        _ => false,
    }
}
