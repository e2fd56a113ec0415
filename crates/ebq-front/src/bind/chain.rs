//! Chained JOIN: `FROM a s JOIN b m ON … JOIN c e ON …`, a start, a middle
//! and an end event on the same key (openat → read → close per fd).
//!
//! The pair opens at the start event and closes at the end event, as in a
//! single JOIN; between them every middle event on the pair's key updates
//! per-pair accumulators kept in the pair itself (COUNT and SUM of a middle
//! column, each an atomic add), which the end event reads like carried start
//! columns. So each closed pair's row has, besides start and end columns,
//! the aggregates over its middle events. The middle's ON must hold exactly
//! the end's keys (the same start expressions): a middle event finds its
//! pair by the key the end will close it by. The middle event's columns are
//! read only inside those aggregates.
//!
//! This module binds the middle JOIN on its own and rewrites the query into
//! a single JOIN whose SELECT names each middle aggregate by a placeholder
//! ([`Binder::middle`]) that binds as a carried column.

use super::expr::{agg_func, contains_aggregate, err, function_args};
use super::join::{conjuncts, pairing_key, side_of};
use super::{bind_event, AggFunc, Binder, BoundJoin, BoundMiddle, ColumnSource, MiddleAgg, ScalarExpr, Side};
use crate::catalog::Catalog;
use crate::error::{Error, Result, Stage};
use crate::parse::{EventName, Expr, Join, Query, SelectItem};
use crate::types::DataType;
use sqlparser::ast::{FunctionArgExpr, Ident, Spanned};
use std::ops::ControlFlow;

/// The middle of a chained JOIN, bound, and what the rewritten query's
/// placeholders stand for.
pub(super) struct Chain {
    /// The middle event, attached as it reads.
    event: super::BoundEvent,
    /// Its name in qualified columns (`r`).
    name: String,
    /// The middle ON's keys: (start expression as the start reads it, middle expression).
    keys: Vec<(ScalarExpr, ScalarExpr)>,
    /// The per-pair aggregates.
    aggs: Vec<MiddleAgg>,
    /// Placeholder identifier → the carried accumulator it binds as.
    pub(super) placeholders: Vec<(String, ScalarExpr)>,
    /// The middle JOIN, for errors.
    join: Join,
}

/// `Some((single-JOIN query, middle))` for a query with two JOINs (the first
/// the middle); `None` for fewer; an error for more, or for what a chain
/// does not support.
pub(super) fn split_chain(query: &Query, catalog: &Catalog) -> Result<Option<(Query, Chain)>> {
    let middle = match query.joins.as_slice() {
        [] | [_] => return Ok(None),
        [middle, _] => middle,
        [_, _, extra, ..] => {
            return Err(Error::query(
                Stage::Bind,
                "a chained JOIN has one middle event: FROM start s JOIN middle m ON … JOIN end e ON …",
                Some(extra.span),
            ))
        }
    };
    refuse_unsupported(query, middle)?;
    let start = bind_event(&query.from, catalog)?;
    let event = bind_event(&middle.event, catalog)?;
    let sides = vec![
        Side { event: &start, alias: query.from.alias.clone(), carried: true },
        Side { event: &event, alias: middle.event.alias.clone(), carried: false },
    ];
    let name = sides[1].display_name();
    let qualifiers = qualifiers(&middle.event.alias, &event.name);
    let binder = Binder::new(sides, catalog.kernel());
    let keys = middle_keys(&binder, middle, &name)?;
    let mut rewritten = query.clone();
    rewritten.joins.remove(0);
    let mut aggs = vec![];
    let mut placeholders = vec![];
    for item in &mut rewritten.projection {
        rewrite_item(item, &binder, &qualifiers, &mut aggs, &mut placeholders)?;
    }
    refuse_bare_middle(&rewritten, &qualifiers, &name)?;
    let raw = binder.tp_btf_sides()?[1];
    drop(binder);
    let event = super::btf_args::attach_as(event, raw);
    Ok(Some((rewritten, Chain { event, name, keys, aggs, placeholders, join: middle.clone() })))
}

/// What a chain refuses before binding: a union of starts, GROUP BY, WINDOW.
fn refuse_unsupported(query: &Query, middle: &Join) -> Result<()> {
    if !query.union.is_empty() {
        return Err(Error::query(
            Stage::Bind,
            "a chained JOIN starts at one event, not a union of start events",
            Some(middle.span),
        ));
    }
    if let Some(g) = query.group_by.first() {
        return Err(err(
            g,
            "a chained JOIN makes one row per closed pair: GROUP BY over chained pairs is not supported yet",
        ));
    }
    if let Some(w) = query.window {
        return Err(Error::query(
            Stage::Bind,
            "a chained JOIN makes one row per closed pair: WINDOW is not supported",
            Some(w.span),
        ));
    }
    Ok(())
}

/// The names a middle column can be qualified by: its alias, or its event's name.
fn qualifiers(alias: &Option<String>, event: &EventName) -> Vec<String> {
    match (alias, event) {
        (Some(a), _) => vec![a.clone()],
        (None, EventName::Tracepoint { name, .. }) => vec![name.clone()],
        (None, other) => vec![other.to_string()],
    }
}

/// The middle ON: key equalities with the start event only.
fn middle_keys(binder: &Binder, middle: &Join, name: &str) -> Result<Vec<(ScalarExpr, ScalarExpr)>> {
    let on = binder.condition(&middle.on, "ON")?;
    let mut keys = vec![];
    for c in conjuncts(on) {
        match pairing_key(&c) {
            Some((s, m, _)) => keys.push((s, m)),
            None => {
                return Err(err(
                    &middle.on,
                    format!(
                        "the middle event's ON holds only key equalities with the start event (the end's keys, \
                         e.g. {name}.pid = {start}.pid): `{c}` is not one",
                        start = binder.sides[0].display_name()
                    ),
                ))
            }
        }
    }
    Ok(keys)
}

/// Replaces each middle aggregate in `item` by a placeholder; an item so
/// changed keeps its text as its name.
fn rewrite_item(
    item: &mut SelectItem,
    binder: &Binder,
    qualifiers: &[String],
    aggs: &mut Vec<MiddleAgg>,
    placeholders: &mut Vec<(String, ScalarExpr)>,
) -> Result<()> {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.clone())),
        _ => return Ok(()),
    };
    let original = expr.to_string();
    let before = placeholders.len();
    let flow = sqlparser::ast::visit_expressions_mut(expr, |e| {
        let Expr::Function(f) = &*e else { return ControlFlow::Continue(()) };
        match middle_agg(f, e, binder, qualifiers) {
            Ok(None) => ControlFlow::Continue(()),
            Ok(Some(agg)) => {
                let placeholder = format!("ebq_middle_{}", aggs.len());
                let text = e.to_string();
                let column = ColumnSource::Middle { name: text.clone(), index: aggs.len() };
                let carried = ColumnSource::Start { name: text, column: Box::new(column) };
                placeholders.push((placeholder.clone(), ScalarExpr::Column { source: carried, ty: agg.ty }));
                aggs.push(agg);
                *e = Expr::Identifier(Ident::new(placeholder));
                ControlFlow::Continue(())
            }
            Err(error) => ControlFlow::Break(error),
        }
    });
    if let ControlFlow::Break(error) = flow {
        return Err(error);
    }
    if placeholders.len() > before && alias.is_none() {
        let expr = expr.clone();
        *item = SelectItem::ExprWithAlias { expr, alias: Ident::new(original) };
    }
    Ok(())
}

/// `COUNT(m.x)`, `COUNT(m.*)` or `SUM(m.x)` over the middle event's columns
/// only: a per-pair aggregate; `None` for a call that reads no middle column.
fn middle_agg(
    f: &sqlparser::ast::Function,
    at: &Expr,
    binder: &Binder,
    qualifiers: &[String],
) -> Result<Option<MiddleAgg>> {
    let Some(func) = agg_func(f) else { return Ok(None) };
    let arg = match function_args(f).as_slice() {
        [FunctionArgExpr::QualifiedWildcard(q)] if qualifiers.contains(&q.to_string()) => None,
        [FunctionArgExpr::Expr(x)] if reads_middle(x, qualifiers).is_some() => Some(x),
        _ => return Ok(None),
    };
    let bound = match arg {
        Some(x) => binder.scalar(x)?,
        None => ScalarExpr::Int { value: 1, ty: DataType::U64 },
    };
    if arg.is_some() && side_of(&bound) != Some(false) {
        return Err(err(at, "a middle aggregate reads the middle event's columns only"));
    }
    let ty = match (func, bound.ty()) {
        (AggFunc::Count, _) => DataType::U64,
        (AggFunc::Sum, t) if t.is_int() && t.is_signed() => DataType::I64,
        (AggFunc::Sum, t) if t.is_int() => DataType::U64,
        (AggFunc::Sum, t) => return Err(err(at, format!("SUM over the middle events needs an integer, not {t}"))),
        (other, _) => {
            return Err(err(
                at,
                format!("{other} over a chained JOIN's middle events is not supported yet: COUNT and SUM are"),
            ))
        }
    };
    Ok(Some(MiddleAgg { func, arg: bound, ty }))
}

/// Where `e` reads a column qualified by a middle name, if it does.
fn reads_middle(e: &Expr, qualifiers: &[String]) -> Option<sqlparser::tokenizer::Span> {
    let mut found = None;
    let _ = sqlparser::ast::visit_expressions(e, |x| {
        if let Expr::CompoundIdentifier(parts) = x {
            if parts.len() > 1 && qualifiers.contains(&parts[0].value) {
                found = Some(x.span());
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found
}

/// A middle column left outside a middle aggregate (SELECT, WHERE, ORDER BY):
/// refused, with where it stands.
fn refuse_bare_middle(query: &Query, qualifiers: &[String], name: &str) -> Result<()> {
    let items = query.projection.iter().filter_map(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
        _ => None,
    });
    let order = query.order_by.iter().map(|o| &o.expr);
    for e in items.chain(query.selection.iter()).chain(order).chain(query.having.iter()) {
        if let Some(span) = reads_middle(e, qualifiers) {
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "the middle event's columns are read only inside COUNT({name}.…) or SUM({name}.…): \
                     each closed pair's row carries those over its middle events"
                ),
                crate::error::Span::from_sql(span),
            ));
        }
        if contains_aggregate(e) {
            return Err(err(
                e,
                "a chained JOIN makes one row per closed pair: aggregates other than COUNT or SUM over the \
                 middle event are not supported yet",
            ));
        }
    }
    Ok(())
}

impl Chain {
    /// The bound middle of `join` (the end's pairing): its keys in the end's
    /// key order. The middle's ON must hold the end's keys, no more, no less.
    pub(super) fn middle_of(&self, join: &BoundJoin) -> Result<BoundMiddle> {
        let mut keys = vec![];
        for (s, _, _) in &join.keys {
            match self.keys.iter().find(|(ms, _)| ms == s) {
                Some((_, m)) => keys.push(m.clone()),
                None => return Err(self.key_mismatch(join)),
            }
        }
        if self.keys.len() != keys.len() {
            return Err(self.key_mismatch(join));
        }
        Ok(BoundMiddle {
            event: self.event.clone(),
            name: self.name.clone(),
            keys,
            aggs: self.aggs.clone(),
            span: self.join.span,
        })
    }

    fn key_mismatch(&self, join: &BoundJoin) -> Error {
        let keys: Vec<String> = join.keys.iter().map(|(s, _, _)| s.qualified(&join.start_name)).collect();
        err(
            &self.join.on,
            format!(
                "the middle event must pair on the end's keys, the same start columns: [{}] \
                 (a middle event finds its pair by the key the end closes it by)",
                keys.join(", ")
            ),
        )
    }
}

impl Binder<'_> {
    /// The carried accumulator a placeholder of the rewritten SELECT stands for.
    pub(super) fn middle_placeholder(&self, name: &str) -> Option<ScalarExpr> {
        self.middle.iter().find(|(p, _)| p == name).map(|(_, e)| e.clone())
    }
}
