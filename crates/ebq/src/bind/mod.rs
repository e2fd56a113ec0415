//! Bind: [`Query`] + [`Catalog`] → typed [`LogicalPlan`].
//!
//! Resolves the event and every column, checks types, and separates group
//! keys from aggregates. Anything that binds must compile and load: the checks
//! here are the user-facing ones, the planner adds BPF resource limits.

mod expr;
mod file;
mod logical;
mod post;

pub use logical::*;

use crate::catalog::{Catalog, CatalogError, FieldKind, SystemColumn, TracepointFormat};
use crate::error::{Error, QueryError, Result, Span, Stage};
use crate::parse::{EventName, EventRef, Expr, Query, SelectItem};
use crate::types::DataType;
use sqlparser::ast::Spanned;

/// Deepest expression the binder accepts; deeper ones would exhaust the
/// binder's stack (and the verifier's patience) long before they mean anything.
pub const MAX_EXPR_DEPTH: u32 = 256;

/// Most values in one `IN (…)` list.
pub const MAX_IN_LIST: usize = 256;

/// Capacity given to `__data_loc` strings (file names, command lines): bytes incl. NUL.
pub const DATA_LOC_STRING_CAP: u16 = 64;

/// Binds a parsed query against the catalog.
pub fn bind(query: &Query, catalog: &Catalog) -> Result<LogicalPlan> {
    if query.distinct {
        return bind(&distinct_as_group_by(query)?, catalog);
    }
    let event = bind_event(&query.from, catalog)?;
    let binder = Binder {
        format: &event.format,
        alias: query.from.alias.clone(),
        event_name: &event.name,
        depth: std::cell::Cell::new(0),
    };
    unsupported_clauses(query)?;
    let filter = match &query.selection {
        Some(e) => Some(binder.condition(e, "WHERE")?),
        None => None,
    };
    let is_aggregate = !query.group_by.is_empty()
        || query.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => expr::contains_aggregate(e),
            _ => false,
        });
    let limit = query.limit.as_ref().map(post::limit_value).transpose()?;
    let (body, order_by) = if is_aggregate { binder.aggregate_body(query)? } else { binder.row_body(query)? };
    let window = match query.window {
        Some(w) if !is_aggregate => {
            return Err(Error::query(
                Stage::Bind,
                "WINDOW groups aggregates; a query without aggregates streams every event as it happens",
                Some(w.span),
            ))
        }
        Some(w) => Some(Window { kind: w.kind, size: w.size, step: w.step, span: Some(w.span) }),
        None => None,
    };
    let select_span = query.projection.iter().filter_map(|item| Span::from_sql(item.span())).reduce(Span::union);
    Ok(LogicalPlan { event, filter, body, window, select_span, order_by, limit })
}

/// `SELECT DISTINCT a, b …` is `SELECT a, b … GROUP BY a, b`.
fn distinct_as_group_by(q: &Query) -> Result<Query> {
    let mut exprs = vec![];
    for item in &q.projection {
        match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } if !expr::contains_aggregate(e) => {
                exprs.push(e.clone())
            }
            other => {
                return Err(Error::query(
                    Stage::Bind,
                    "SELECT DISTINCT takes plain columns or expressions (use GROUP BY with aggregates)",
                    Span::from_sql(other.span()),
                ))
            }
        }
    }
    if !q.group_by.is_empty() {
        return Err(Error::query(
            Stage::Bind,
            "SELECT DISTINCT cannot be combined with GROUP BY",
            Span::from_sql(q.group_by[0].span()),
        ));
    }
    Ok(Query { distinct: false, group_by: exprs, ..q.clone() })
}

fn bind_event(from: &EventRef, catalog: &Catalog) -> Result<BoundEvent> {
    match &from.name {
        EventName::Tracepoint { category, .. } if category == "ftrace" => Err(Error::Query(
            QueryError::new(
                Stage::Bind,
                format!(
                    "{}: ftrace's own events describe the function tracer's buffers; BPF cannot attach to them",
                    from.name
                ),
                Some(from.span),
            )
            .with_help("`ebq events` lists the tracepoints BPF can attach to"),
        )),
        EventName::Tracepoint { category, name } => match catalog.tracepoint(category, name) {
            Ok(format) => Ok(BoundEvent { name: from.name.clone(), format }),
            Err(CatalogError::UnknownEvent { event, suggestions }) => {
                let mut e = QueryError::new(Stage::Bind, format!("unknown event `{event}`"), Some(from.span));
                if !suggestions.is_empty() {
                    e = e.with_help(format!("did you mean {}?", suggestions.join(", ")));
                } else {
                    e = e.with_help("`ebq events 'PATTERN'` lists the events of this kernel");
                }
                Err(Error::Query(e))
            }
            Err(other) => Err(other.into()),
        },
        other => Err(Error::Query(
            QueryError::new(
                Stage::Bind,
                format!("{other}: only tracepoint events are supported so far"),
                Some(from.span),
            )
            .with_help("`ebq events` lists the tracepoints of this kernel"),
        )),
    }
}

fn unsupported_clauses(q: &Query) -> Result<()> {
    let not_yet =
        |what: &str, span: Option<Span>| Err(Error::query(Stage::Bind, format!("{what} is not supported yet"), span));
    if let Some(j) = q.joins.first() {
        return not_yet("JOIN", Some(j.span));
    }
    Ok(())
}

/// Binding context for one event.
struct Binder<'a> {
    format: &'a TracepointFormat,
    alias: Option<String>,
    event_name: &'a EventName,
    /// Current expression nesting, bounded by [`MAX_EXPR_DEPTH`].
    depth: std::cell::Cell<u32>,
}

impl Binder<'_> {
    fn row_body(&self, q: &Query) -> Result<(QueryBody, Vec<SortKey>)> {
        if let Some(h) = &q.having {
            return Err(Error::query(
                Stage::Bind,
                "HAVING needs GROUP BY or aggregates; use WHERE to filter events",
                Span::from_sql(h.span()),
            ));
        }
        let mut columns = vec![];
        for item in &q.projection {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    let s = self.scalar(e)?;
                    columns.push(OutputColumn { name: e.to_string(), ty: s.ty(), source: s });
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let s = self.scalar(expr)?;
                    columns.push(OutputColumn { name: alias.value.clone(), ty: s.ty(), source: s });
                }
                SelectItem::Wildcard(_) => {
                    for f in &self.format.fields {
                        if let Some(s) =
                            self.field_column(f.name.as_str(), None).ok().filter(|_| f.kind != FieldKind::Unsupported)
                        {
                            columns.push(OutputColumn { name: f.name.clone(), ty: s.ty(), source: s });
                        }
                    }
                }
                other => {
                    return Err(Error::query(
                        Stage::Bind,
                        format!("`{other}` is not supported"),
                        Span::from_sql(other.span()),
                    ))
                }
            }
        }
        let order_by = self.order_by_rows(&q.order_by, &columns)?;
        Ok((QueryBody::Rows { columns }, order_by))
    }

    fn aggregate_body(&self, q: &Query) -> Result<(QueryBody, Vec<SortKey>)> {
        // GROUP BY may name a SELECT alias.
        let mut keys = vec![];
        for g in &q.group_by {
            let by_alias = match g {
                Expr::Identifier(id) if self.lookup(&id.value).is_none() => {
                    q.projection.iter().find_map(|item| match item {
                        SelectItem::ExprWithAlias { expr, alias } if alias.value == id.value => Some(expr),
                        _ => None,
                    })
                }
                _ => None,
            };
            let key = self.scalar(by_alias.unwrap_or(g))?;
            if key.ty() == DataType::Bool {
                return Err(Error::query(Stage::Bind, "cannot GROUP BY a condition", Span::from_sql(g.span())));
            }
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let mut aggs: Vec<AggCall> = vec![];
        let mut columns = vec![];
        for item in &q.projection {
            let (e, name) = match item {
                SelectItem::UnnamedExpr(e) => (e, e.to_string()),
                SelectItem::ExprWithAlias { expr, alias } => (expr, alias.value.clone()),
                other => {
                    return Err(Error::query(
                        Stage::Bind,
                        format!("`{other}` cannot be used with GROUP BY or aggregates; name the columns"),
                        Span::from_sql(other.span()),
                    ))
                }
            };
            let source = self.post_expr(e, &keys, &mut aggs)?;
            if let PostExpr::Int { .. } | PostExpr::Float(_) = source {
                return Err(Error::query(Stage::Bind, "a constant column is not supported", Span::from_sql(e.span())));
            }
            columns.push(OutputColumn { name, ty: source.ty(), source });
        }
        let having = match &q.having {
            Some(h) => {
                let p = self.post_expr(h, &keys, &mut aggs)?;
                if p.ty() != DataType::Bool {
                    return Err(Error::query(
                        Stage::Bind,
                        format!("HAVING needs a true/false condition; `{h}` is {}", p.ty()),
                        Span::from_sql(h.span()),
                    ));
                }
                Some(p)
            }
            None => None,
        };
        let order_by = self.order_by_post(&q.order_by, &columns, &keys, &mut aggs)?;
        Ok((QueryBody::Aggregate { keys, aggs, columns, having }, order_by))
    }

    /// Looks a bare column name up: event fields first, then system columns,
    /// then file columns.
    fn lookup(&self, name: &str) -> Option<ScalarExpr> {
        self.field_column(name, None)
            .ok()
            .or_else(|| {
                SystemColumn::from_name(name)
                    .map(|s| ScalarExpr::Column { source: ColumnSource::System(s), ty: s.data_type() })
            })
            .or_else(|| self.file_lookup(name))
    }

    /// The event field `name` (element `index` of an array field), typed.
    fn field_column(&self, name: &str, index: Option<u32>) -> std::result::Result<ScalarExpr, String> {
        let f = self.format.field(name).ok_or_else(|| format!("unknown column `{name}`"))?;
        let field = |offset, size, kind| ColumnSource::Field { name: f.name.clone(), offset, size, kind };
        match (&f.kind, index) {
            (FieldKind::Int, None) => Ok(ScalarExpr::Column {
                source: field(f.offset, f.size, FieldKind::Int),
                ty: DataType::int_of_size(f.size, f.signed),
            }),
            (FieldKind::CharArray { len }, None) => Ok(ScalarExpr::Column {
                source: field(f.offset, f.size, f.kind.clone()),
                ty: DataType::Str { cap: (*len).clamp(1, 256) as u16 },
            }),
            (FieldKind::DataLocStr, None) => Ok(ScalarExpr::Column {
                source: field(f.offset, f.size, FieldKind::DataLocStr),
                ty: DataType::Str { cap: DATA_LOC_STRING_CAP },
            }),
            (FieldKind::IntArray { elem_size, len }, Some(i)) if i < *len => Ok(ScalarExpr::Column {
                source: ColumnSource::Field {
                    name: format!("{}[{i}]", f.name),
                    offset: f.offset + i * elem_size,
                    size: *elem_size,
                    kind: FieldKind::Int,
                },
                ty: DataType::int_of_size(*elem_size, f.signed),
            }),
            (FieldKind::IntArray { len, .. }, Some(i)) => {
                Err(format!("index {i} is out of range: `{name}` has {len} elements"))
            }
            (FieldKind::IntArray { len, .. }, None) => {
                Err(format!("`{name}` is an array of {len} integers; pick one element, e.g. `{name}[0]`"))
            }
            (_, Some(_)) => Err(format!("`{name}` is not an array")),
            (FieldKind::Unsupported, None) => {
                Err(format!("column `{name}` has type `{}`, which ebq cannot read yet", f.c_type))
            }
        }
    }

    /// All column names, for suggestions.
    fn column_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.format.fields.iter().map(|f| f.name.as_str()).collect();
        names.extend(SystemColumn::ALL.iter().map(|s| s.name()));
        names.extend(self.file_column_names());
        names
    }

    /// Is `qualifier` a name for the FROM event?
    fn is_event_qualifier(&self, qualifier: &str) -> bool {
        self.alias.as_deref() == Some(qualifier)
            || matches!(self.event_name, EventName::Tracepoint { name, .. } if name == qualifier)
    }
}
