//! Views by inlining: a pure rewrite of a parsed [`Query`] before bind.
//!
//! A view is an ordinary ebq SELECT without aggregates whose every column is
//! named (`e.pid AS pid`, or a bare column): `SELECT expr AS name, … FROM
//! <event, JOIN or union> [WHERE pred]`. A query reading it is rewritten:
//!
//! ```text
//! view io.ops:  SELECT e.pid AS pid, args[2] AS bytes FROM a e JOIN b x ON … WHERE e.id = 0
//! query:        SELECT pid, SUM(bytes) FROM io.ops WHERE pid = 7 GROUP BY pid
//! inlined:      SELECT (e.pid) AS pid, SUM((args[2])) FROM a e JOIN b x ON …
//!               WHERE (e.id = 0) AND (pid = 7 → (e.pid) = 7) GROUP BY (e.pid)
//! ```
//!
//! A branch of a UNION ALL may read a view too (`SELECT start AS t FROM
//! io.ops WHERE path = 'aio' UNION ALL SELECT … FROM ev`): the branch becomes
//! one branch per source of the view (each branch of a union view, or its one
//! event or JOIN), its columns and WHERE written over that source's, so a
//! source its WHERE rules out is left out by the planner as any other branch.
//!
//! So the binder, planner and codegen see one ordinary query and a view costs
//! nothing at run time; only the columns the query uses are carried (a JOIN's
//! start side carries no column the query does not read). Everything that
//! came from the view's text is re-positioned onto the view's name in the
//! user's FROM, so a later error (an unknown event, a stack budget) still
//! points into the user's text.

mod join_sides;

use super::{parse_query, EventRef, Join, Query, UnionBranch};
use crate::error::{Error, Result, Span, Stage};
use sqlparser::ast::{visit_expressions_mut, Expr, Ident, ObjectNamePart, SelectItem, Spanned};
use std::ops::ControlFlow;

/// A named, parsed view.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Its name as FROM spells it (`io.ops`).
    pub name: String,
    /// Its SQL text.
    pub sql: String,
    /// Its columns, in order, with their defining expressions.
    pub columns: Vec<(String, Expr)>,
    query: Query,
}

impl View {
    /// Parses and checks a view's text. `name` must be a `category.name`
    /// (FROM reads a dotted name as one relation).
    pub fn parse(name: &str, sql: &str) -> Result<View> {
        let at = |m: String| Error::query(Stage::Parse, format!("in view {name}: {m}"), None);
        match super::parse_event_name(name) {
            Ok(super::EventName::Tracepoint { .. }) if name.contains('.') && !name.contains(':') => {}
            _ => return Err(at(format!("a view's name is CATEGORY.NAME (like io.ops), not `{name}`"))),
        }
        let query = parse_query(sql).map_err(|e| match e {
            Error::Query(q) => at(format!(
                "{} (at {})",
                q.message,
                q.span.map_or("?".into(), |s| format!("{}:{}", s.start.line, s.start.column))
            )),
            other => other,
        })?;
        let refused = [
            (query.distinct, "DISTINCT"),
            (!query.group_by.is_empty(), "GROUP BY"),
            (query.having.is_some(), "HAVING"),
            (!query.order_by.is_empty(), "ORDER BY"),
            (query.limit.is_some(), "LIMIT"),
            (query.window.is_some(), "WINDOW"),
            (query.stream.is_some(), "FROM a, b"),
        ];
        if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
            return Err(at(format!("a view is SELECT columns FROM events [WHERE …]; it cannot have {what}")));
        }
        let mut columns: Vec<(String, Expr)> = vec![];
        for item in &query.projection {
            let (col, expr) = match item {
                SelectItem::ExprWithAlias { expr, alias } => (alias.value.clone(), expr.clone()),
                SelectItem::UnnamedExpr(Expr::Identifier(id)) => (id.value.clone(), Expr::Identifier(id.clone())),
                SelectItem::UnnamedExpr(Expr::CompoundIdentifier(ids)) => (
                    ids.last().expect("a compound name has parts").value.clone(),
                    Expr::CompoundIdentifier(ids.clone()),
                ),
                other => return Err(at(format!("name every column with AS: `{other}`"))),
            };
            if has_aggregate(&expr) {
                return Err(at(format!("column {col} is an aggregate; a view selects per-event columns")));
            }
            if columns.iter().any(|(c, _)| c.eq_ignore_ascii_case(&col)) {
                return Err(at(format!("column {col} is named twice")));
            }
            columns.push((col, expr));
        }
        Ok(View { name: name.to_string(), sql: sql.to_string(), columns, query })
    }

    fn named_columns(&self) -> Columns<'_> {
        Columns { of: &self.name, columns: &self.columns }
    }
}

/// The named columns an expression is rewritten over: a view's, or one
/// branch's of the union a view reads (`of` names them in errors).
struct Columns<'a> {
    of: &'a str,
    columns: &'a [(String, Expr)],
}

impl Columns<'_> {
    fn column(&self, name: &str) -> Option<&Expr> {
        self.columns.iter().find(|(c, _)| c.eq_ignore_ascii_case(name)).map(|(_, e)| e)
    }

    fn column_list(&self) -> String {
        self.columns.iter().map(|(c, _)| c.as_str()).collect::<Vec<_>>().join(", ")
    }
}

/// The view `event` names (a relation `category.name`), if any.
fn view_of<'v>(event: &EventRef, views: &'v [View]) -> Option<&'v View> {
    let super::EventName::Tracepoint { category, name } = &event.name else { return None };
    let name = format!("{category}.{name}");
    views.iter().find(|v| v.name.eq_ignore_ascii_case(&name))
}

/// `a AND b`, each side parenthesised; either alone when the other is absent.
fn and(a: Option<Expr>, b: Option<Expr>) -> Option<Expr> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(a))),
            op: sqlparser::ast::BinaryOperator::And,
            right: Box::new(Expr::Nested(Box::new(b))),
        }),
        (a, b) => a.or(b),
    }
}

/// Rewrites `q` when its FROM, or a branch of its union, names one of
/// `views`; returns it unchanged otherwise.
pub fn inline(q: Query, views: &[View]) -> Result<Query> {
    let q = if q.union.is_empty() { q } else { inline_branches(q, views)? };
    let q = if q.joins.is_empty() { q } else { join_sides::inline_join_sides(q, views)? };
    inline_from(q, views)
}

/// `q` with each union branch reading a view replaced by the view's sources
/// ([`expand_branch`]); the union keeps its alias and its first branch's columns.
fn inline_branches(mut q: Query, views: &[View]) -> Result<Query> {
    let mut branches = Vec::with_capacity(q.union.len());
    for branch in std::mem::take(&mut q.union) {
        match view_of(&branch.event, views) {
            Some(view) => branches.extend(expand_branch(branch, view)?),
            None => branches.push(branch),
        }
    }
    q.from.name = branches[0].event.name.clone();
    q.union = branches;
    Ok(q)
}

/// A branch reading `view` as one branch per source of the view: the
/// branch's columns and WHERE over the view's columns, then (a union view)
/// over each of its branches' columns, ANDed with the view's and the
/// source's own WHERE. What came from the view's text is positioned at the
/// view's name in the branch.
fn expand_branch(branch: UnionBranch, view: &View) -> Result<Vec<UnionBranch>> {
    let at = branch.event.span;
    if let Some(join) = &branch.join {
        return Err(Error::query(
            Stage::Bind,
            format!("view {} cannot be joined; read it alone in its branch", view.name),
            Some(join.span),
        ));
    }
    let alias = branch.event.alias.as_deref();
    let over_view = |e: &Expr| substitute(e, &view.named_columns(), alias, at, &[]);
    let exprs = branch.exprs.iter().map(over_view).collect::<Result<Vec<_>>>()?;
    let mut source = view.query.clone();
    respan_query(&mut source, at);
    let selection = and(source.selection.take(), branch.selection.as_ref().map(over_view).transpose()?);
    if source.union.is_empty() {
        let join = one_join(std::mem::take(&mut source.joins), view)?;
        let event = source.from;
        return Ok(vec![UnionBranch { columns: branch.columns, exprs, event, join, selection, span: branch.span }]);
    }
    let union_alias = source.from.alias.as_deref();
    source
        .union
        .into_iter()
        .map(|src| {
            let named: Vec<(String, Expr)> =
                src.columns.iter().map(|c| c.value.clone()).zip(src.exprs.iter().cloned()).collect();
            let cols = Columns { of: &view.name, columns: &named };
            let over_src = |e: &Expr| substitute(e, &cols, union_alias, at, &[]);
            Ok(UnionBranch {
                columns: branch.columns.clone(),
                exprs: exprs.iter().map(over_src).collect::<Result<_>>()?,
                event: src.event,
                join: src.join,
                selection: and(src.selection, selection.as_ref().map(over_src).transpose()?),
                span: branch.span,
            })
        })
        .collect()
}

/// The JOIN of a single-event view read in a union branch (a branch pairs at most two events).
fn one_join(mut joins: Vec<Join>, view: &View) -> Result<Option<Join>> {
    if joins.len() > 1 {
        let at = joins[1].span;
        return Err(Error::query(
            Stage::Bind,
            format!("view {} joins {} events; a union branch pairs at most two", view.name, joins.len() + 1),
            Some(at),
        ));
    }
    Ok(joins.pop())
}

/// Rewrites `q` when its FROM names one of `views`; returns it unchanged otherwise.
fn inline_from(q: Query, views: &[View]) -> Result<Query> {
    let Some(view) = view_of(&q.from, views) else { return Ok(q) };
    let at = q.from.span;
    if !q.union.is_empty() || !q.joins.is_empty() || q.stream.is_some() {
        return Err(Error::query(
            Stage::Bind,
            format!("view {} cannot be joined; query it alone", view.name),
            Some(at),
        ));
    }
    let alias = q.from.alias.clone();
    let cols = view.named_columns();
    let subst = |e: &Expr| substitute(e, &cols, alias.as_deref(), at, &[]);
    // GROUP BY, HAVING and ORDER BY may name the query's own output columns (`AS is_write`).
    let outputs: Vec<String> = q
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
            _ => None,
        })
        .collect();
    let subst_late = |e: &Expr| substitute(e, &cols, alias.as_deref(), at, &outputs);
    let mut out = view.query.clone();
    respan_query(&mut out, at);
    out.distinct = q.distinct;
    out.projection = q
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(e @ (Expr::Identifier(_) | Expr::CompoundIdentifier(_))) => {
                let name = match e {
                    Expr::Identifier(id) => id.clone(),
                    Expr::CompoundIdentifier(ids) => ids.last().expect("parts").clone(),
                    _ => unreachable!(),
                };
                Ok(SelectItem::ExprWithAlias { expr: subst(e)?, alias: name })
            }
            SelectItem::UnnamedExpr(e) => Ok(SelectItem::UnnamedExpr(subst(e)?)),
            SelectItem::ExprWithAlias { expr, alias } => {
                Ok(SelectItem::ExprWithAlias { expr: subst(expr)?, alias: alias.clone() })
            }
            other => Err(Error::query(
                Stage::Bind,
                format!("select view {}'s columns by name: {}", view.name, cols.column_list()),
                Span::from_sql(other.span()).or(Some(at)),
            )),
        })
        .collect::<Result<_>>()?;
    out.selection = and(out.selection.take(), q.selection.as_ref().map(subst).transpose()?);
    out.group_by = q.group_by.iter().map(subst_late).collect::<Result<_>>()?;
    out.having = q.having.as_ref().map(subst_late).transpose()?;
    out.order_by = q
        .order_by
        .iter()
        .map(|o| Ok(sqlparser::ast::OrderByExpr { expr: subst_late(&o.expr)?, ..o.clone() }))
        .collect::<Result<_>>()?;
    out.limit = q.limit.clone();
    out.window = q.window;
    Ok(out)
}

/// `e` with every view column replaced by its (parenthesised, re-positioned)
/// definition. Names that are no view column are a positioned error, except
/// the query's own output names in `outputs` (left for the binder's aliases).
fn substitute(e: &Expr, view: &Columns, alias: Option<&str>, at: Span, outputs: &[String]) -> Result<Expr> {
    let mut e = e.clone();
    let mut failed: Option<Error> = None;
    let _ = visit_expressions_mut(&mut e, |expr| {
        let col: Option<&Ident> = match expr {
            Expr::Identifier(id) => Some(id),
            Expr::CompoundIdentifier(ids)
                if ids.len() == 2
                    && (alias.is_some_and(|a| ids[0].value.eq_ignore_ascii_case(a))
                        || view.of.ends_with(&format!(".{}", ids[0].value))) =>
            {
                Some(&ids[1])
            }
            Expr::CompoundIdentifier(ids) => {
                let span = ids.iter().filter_map(|i| Span::from_sql(i.span)).reduce(Span::union).or(Some(at));
                let name = ids.iter().map(|i| i.value.as_str()).collect::<Vec<_>>().join(".");
                failed.get_or_insert_with(|| unknown(view, &name, span));
                return ControlFlow::Break(());
            }
            _ => None,
        };
        if let Some(id) = col {
            match view.column(&id.value) {
                Some(def) => {
                    let mut def = def.clone();
                    respan(&mut def, at);
                    *expr = Expr::Nested(Box::new(def));
                }
                None if outputs.iter().any(|o| o.eq_ignore_ascii_case(&id.value)) => {}
                None => {
                    let span = Span::from_sql(id.span).or(Some(at));
                    failed.get_or_insert_with(|| unknown(view, &id.value, span));
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    });
    match failed {
        Some(err) => Err(err),
        None => Ok(e),
    }
}

fn unknown(view: &Columns, name: &str, span: Option<Span>) -> Error {
    Error::query(
        Stage::Bind,
        format!("view {} has no column {name}; its columns are {}", view.of, view.column_list()),
        span,
    )
}

/// True when `e` calls an aggregate function.
fn has_aggregate(e: &Expr) -> bool {
    let mut e = e.clone();
    let found = visit_expressions_mut(&mut e, |x| match x {
        Expr::Function(f) => {
            let name = f.name.to_string().to_ascii_lowercase();
            let aggregates = ["count", "sum", "min", "max", "avg", "hist", "lhist", "quantile", "stack_count"];
            if aggregates.contains(&name.as_str()) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

fn to_sql_span(at: Span) -> sqlparser::tokenizer::Span {
    use sqlparser::tokenizer::Location as L;
    sqlparser::tokenizer::Span::new(
        L::new(at.start.line as u64, at.start.column as u64),
        L::new(at.end.line as u64, at.end.column as u64),
    )
}

/// Moves every position in `e` onto `at` (the view's name in the user's
/// text): the view's own positions mean nothing in the user's query.
fn respan(e: &mut Expr, at: Span) {
    let s = to_sql_span(at);
    let _ = visit_expressions_mut(e, |x| {
        match x {
            Expr::Identifier(id) => id.span = s,
            Expr::CompoundIdentifier(ids) => ids.iter_mut().for_each(|i| i.span = s),
            Expr::Value(v) => v.span = s,
            Expr::Function(f) => f.name.0.iter_mut().for_each(|p| {
                if let ObjectNamePart::Identifier(i) = p {
                    i.span = s
                }
            }),
            Expr::Case { case_token, end_token, .. } => {
                case_token.0.span = s;
                end_token.0.span = s;
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
}

fn respan_query(q: &mut Query, at: Span) {
    let fix = |r: &mut EventRef| r.span = at;
    let fix_join = |j: &mut super::Join| {
        fix(&mut j.event);
        j.span = at;
        respan(&mut j.on, at);
    };
    fix(&mut q.from);
    q.joins.iter_mut().for_each(fix_join);
    for b in &mut q.union {
        fix(&mut b.event);
        b.join.iter_mut().for_each(fix_join);
        b.span = at;
        b.exprs.iter_mut().for_each(|e| respan(e, at));
        if let Some(w) = &mut b.selection {
            respan(w, at);
        }
    }
    if let Some(w) = &mut q.selection {
        respan(w, at);
    }
}
