//! JOIN as enter→exit pairing: `FROM start s JOIN end e ON s.k = e.k`.
//!
//! The kernel keeps, per key, what the query needs from the latest start
//! event; an end event with the same key takes it out and becomes one joined
//! event. ON must hold at least one equality between a start expression and
//! an end expression (the pairing key); its other conditions, and WHERE
//! conditions that read end columns, are checked at the end event. WHERE
//! conditions over start columns alone are checked before a pair opens, so
//! filtered-out starts never take a map entry.

use super::expr::err;
use super::{BinaryOp, Binder, BoundJoin, ColumnSource, ScalarExpr};
use crate::error::{Error, Result, Stage};
use crate::parse::Join;
use crate::types::DataType;

/// Binds the ON condition of `join` and takes the start-only conjuncts out of
/// `filter`; returns the pairing and what is left of the filter.
pub(super) fn bind_join(
    binder: &Binder,
    join: &Join,
    filter: &mut Option<ScalarExpr>,
) -> Result<(BoundJoin, Option<ScalarExpr>)> {
    let start = &binder.sides[0];
    let end = &binder.sides[1];
    if start.event.name == end.event.name && (start.alias.is_none() || end.alias.is_none() || start.alias == end.alias)
    {
        return Err(Error::query(
            Stage::Bind,
            "joining an event with itself needs two different aliases (FROM ev a JOIN ev b ON …)",
            Some(join.span),
        ));
    }
    let on = binder.condition(&join.on, "ON")?;
    let mut keys = vec![];
    let mut rest = vec![];
    for c in conjuncts(on) {
        match pairing_key(&c) {
            Some(key) => keys.push(key),
            None => rest.push(c),
        }
    }
    if keys.is_empty() {
        return Err(err(
            &join.on,
            format!(
                "ON must pair the events by an equal key: `{0}.col = {1}.col` with an integer column of each side, \
                 e.g. {0}.tid = {1}.tid",
                start.display_name(),
                end.display_name()
            ),
        ));
    }
    let (start_only, end_filter) = split_start_only(filter.take());
    rest.extend(end_filter.map(conjuncts).unwrap_or_default());
    let bound = BoundJoin {
        start: start.event.clone(),
        start_name: start.display_name(),
        end_name: end.display_name(),
        keys,
        start_filter: start_only,
        also: vec![],
        middle: None,
        str_at_exit: None,
        span: join.span,
    };
    Ok((bound, and_all(rest)))
}

/// `filter`'s conjuncts that read start columns only (as the start program
/// reads them), and the rest (checked at the end event). Checking the former
/// before a pair opens keeps filtered-out starts out of the pairing map.
pub(crate) fn split_start_only(filter: Option<ScalarExpr>) -> (Option<ScalarExpr>, Option<ScalarExpr>) {
    let (mut start_only, mut rest) = (vec![], vec![]);
    for c in filter.map(conjuncts).unwrap_or_default() {
        if side_of(&c) == Some(true) {
            start_only.push(uncarry(c));
        } else {
            rest.push(c);
        }
    }
    (and_all(start_only), and_all(rest))
}

/// `a AND b AND c` → [a, b, c].
pub(super) fn conjuncts(e: ScalarExpr) -> Vec<ScalarExpr> {
    match e {
        ScalarExpr::Binary { op: BinaryOp::And, left, right, .. } => {
            let mut v = conjuncts(*left);
            v.extend(conjuncts(*right));
            v
        }
        other => vec![other],
    }
}

/// [a, b] → `a AND b`.
pub(crate) fn and_all(parts: Vec<ScalarExpr>) -> Option<ScalarExpr> {
    parts.into_iter().reduce(|l, r| ScalarExpr::Binary {
        op: BinaryOp::And,
        left: Box::new(l),
        right: Box::new(r),
        ty: DataType::Bool,
        operand_ty: DataType::Bool,
    })
}

/// Which side an expression reads: `Some(true)` start columns only,
/// `Some(false)` end columns only, `None` both or no columns.
pub(super) fn side_of(e: &ScalarExpr) -> Option<bool> {
    let mut cols = vec![];
    e.typed_columns(&mut cols);
    let starts = cols.iter().filter(|(c, _)| c.is_start()).count();
    match (starts, cols.len()) {
        (_, 0) => None,
        (s, n) if s == n => Some(true),
        (0, _) => Some(false),
        _ => None,
    }
}

/// `start_expr = end_expr` (either order) over integers → the key pair.
pub(super) fn pairing_key(c: &ScalarExpr) -> Option<(ScalarExpr, ScalarExpr, DataType)> {
    let ScalarExpr::Binary { op: BinaryOp::Eq, left, right, operand_ty, .. } = c else { return None };
    if !operand_ty.is_int() {
        return None;
    }
    match (side_of(left), side_of(right)) {
        (Some(true), Some(false)) => Some((uncarry((**left).clone()), (**right).clone(), *operand_ty)),
        (Some(false), Some(true)) => Some((uncarry((**right).clone()), (**left).clone(), *operand_ty)),
        _ => None,
    }
}

/// A start-side expression as the start program reads it: from its own event.
pub(super) fn uncarry(e: ScalarExpr) -> ScalarExpr {
    e.map_columns(&|c| match c {
        ColumnSource::Start { column, .. } => *column,
        other => other,
    })
}
