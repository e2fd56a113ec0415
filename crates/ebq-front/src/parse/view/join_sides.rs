//! A JOIN side that reads a view of one event: `FROM my.reads r JOIN
//! syscalls.sys_exit_read x ON r.tid = x.tid` pairs the view's event under
//! the side's name. The side becomes the view's event (alias `r`); each
//! `r.col` of the query becomes the column's definition with the view's own
//! names qualified by `r` (`fd` → `r.fd`, `e.args[2]` → `r.args[2]`); the
//! view's WHERE, so qualified, is ANDed with the query's, where the JOIN
//! checks it before a pair opens (a start side's) or at the end event.
//!
//! A view over a JOIN or a union cannot be a side: that would pair three or
//! more events, which one kernel pairing does not do.

use super::{and, respan, unknown, view_of, Columns, View};
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EventRef, Query};
use sqlparser::ast::{visit_expressions_mut, Expr, Ident};
use std::ops::ControlFlow;

/// `q` with each JOIN side (FROM or a JOIN) that names one of `views` read
/// as the view's event; `q` unchanged when none does.
pub(super) fn inline_join_sides(mut q: Query, views: &[View]) -> Result<Query> {
    let mut sides: Vec<&mut EventRef> = vec![&mut q.from];
    sides.extend(q.joins.iter_mut().map(|j| &mut j.event));
    let mut read: Vec<Side> = vec![];
    for side in sides {
        let Some(view) = view_of(side, views) else { continue };
        let source = &view.query;
        if !source.union.is_empty() || !source.joins.is_empty() {
            let what = if source.union.is_empty() { "a JOIN" } else { "a union" };
            let why = format!("view {} reads {what}; a JOIN side reads a view of one event", view.name);
            return Err(Error::query(Stage::Bind, why, Some(side.span)));
        }
        let alias = side.alias.clone().unwrap_or_else(|| short_name(&view.name));
        let own = source.from.alias.as_deref();
        let mut columns = view.columns.clone();
        for (_, def) in &mut columns {
            *def = qualified(def, own, &alias, side.span);
        }
        let filter = source.selection.as_ref().map(|w| qualified(w, own, &alias, side.span));
        read.push(Side { view: view.name.clone(), alias: alias.clone(), columns, filter, at: side.span });
        *side = EventRef { name: source.from.name.clone(), alias: Some(alias), span: side.span };
    }
    for Side { view, alias, columns, filter, at } in read {
        let cols = Columns { of: &view, columns: &columns };
        let subst = |e: &Expr| over_side(e, &cols, &alias, at);
        q.projection = q.projection.iter().map(|item| map_item(item, &subst)).collect::<Result<_>>()?;
        q.selection = and(filter, q.selection.as_ref().map(subst).transpose()?);
        for j in &mut q.joins {
            j.on = subst(&j.on)?;
        }
        q.group_by = q.group_by.iter().map(subst).collect::<Result<_>>()?;
        q.having = q.having.as_ref().map(subst).transpose()?;
        for o in &mut q.order_by {
            o.expr = subst(&o.expr)?;
        }
    }
    Ok(q)
}

/// A side that read a view: the view's columns and WHERE over the side's alias.
struct Side {
    view: String,
    alias: String,
    columns: Vec<(String, Expr)>,
    filter: Option<Expr>,
    at: Span,
}

/// The name a side reading view `cat.name` goes by without an alias: `name`.
fn short_name(view: &str) -> String {
    view.rsplit('.').next().unwrap_or(view).to_string()
}

/// A SELECT item with its expression rewritten by `subst`; a bare `r.col`
/// keeps `col` as its output name.
fn map_item(
    item: &sqlparser::ast::SelectItem,
    subst: &dyn Fn(&Expr) -> Result<Expr>,
) -> Result<sqlparser::ast::SelectItem> {
    use sqlparser::ast::SelectItem as S;
    Ok(match item {
        S::UnnamedExpr(e @ Expr::CompoundIdentifier(ids)) => {
            let expr = subst(e)?;
            if &expr == e {
                item.clone()
            } else {
                S::ExprWithAlias { expr, alias: ids.last().expect("parts").clone() }
            }
        }
        S::UnnamedExpr(e) => S::UnnamedExpr(subst(e)?),
        S::ExprWithAlias { expr, alias } => S::ExprWithAlias { expr: subst(expr)?, alias: alias.clone() },
        other => other.clone(),
    })
}

/// A view's expression with its names qualified by the side's `alias`: a
/// bare name (`fd`) and one qualified by the view's own alias (`e.fd`) both
/// become `alias.fd`; positions move onto the view's name in the query.
fn qualified(e: &Expr, own: Option<&str>, alias: &str, at: Span) -> Expr {
    let mut e = e.clone();
    let _ = visit_expressions_mut(&mut e, |x| {
        match x {
            Expr::Identifier(id) => {
                *x = Expr::CompoundIdentifier(vec![Ident::new(alias), id.clone()]);
            }
            Expr::CompoundIdentifier(ids) if own.is_some_and(|o| ids[0].value.eq_ignore_ascii_case(o)) => {
                ids[0] = Ident::new(alias);
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    respan(&mut e, at);
    e
}

/// `e` with every `alias.col` replaced by the column's (qualified,
/// parenthesised) definition; other names are left for the binder. A name
/// under `alias` that is no column of the view is a positioned error.
fn over_side(e: &Expr, cols: &Columns, alias: &str, at: Span) -> Result<Expr> {
    let mut e = e.clone();
    let mut failed: Option<Error> = None;
    let _ = visit_expressions_mut(&mut e, |x| {
        if let Expr::CompoundIdentifier(ids) = x {
            if ids.len() == 2 && ids[0].value.eq_ignore_ascii_case(alias) {
                match cols.column(&ids[1].value) {
                    Some(def) => *x = Expr::Nested(Box::new(def.clone())),
                    None => {
                        let span = Span::from_sql(ids[1].span).or(Some(at));
                        failed = Some(unknown(cols, &ids[1].value, span));
                        return ControlFlow::Break(());
                    }
                }
            }
        }
        ControlFlow::Continue(())
    });
    failed.map_or(Ok(e), Err)
}
