//! `FROM a, b WHERE a.k = b.k … WINDOW(time, SIZE[, STEP])`: a relational
//! join of two event streams, per time window.
//!
//! Unlike `JOIN … ON` (the kernel pairs each end event with the latest start
//! of its key), this is SQL's join: every row of one stream meets every row of
//! the other with equal keys in the same window. Each stream runs as a row
//! query of its own; what reads only one stream stays in its program (WHERE
//! conjuncts, and every one-stream part of the SELECT list becomes a record
//! field), and user space matches the keys and evaluates the rest.

use super::expr::err;
use super::join::{and_all, conjuncts, side_of, uncarry};
use super::{
    bind_event, AggFunc, Binder, GroupExpr, GroupRef, Input, JoinAggregate, JoinKey, LogicalPlan, OutputColumn,
    PostExpr, QueryBody, ScalarExpr, Side, SortKey, StreamJoin, Window,
};
use crate::catalog::{Catalog, SystemColumn};
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EventRef, Expr, Query, SelectItem, WindowKind};
use crate::types::DataType;
use sqlparser::ast::{BinaryOperator, Spanned};

/// Binds a two-stream query; `second` is the event after the comma. Steps:
/// the time window both streams share, the two events, WHERE split into
/// each stream's filters, the equality keys and the residual, then the
/// SELECT list split into each stream's record fields and the part user
/// space computes over the joined row.
pub(super) fn bind_stream_join(query: &Query, second: &EventRef, catalog: &Catalog) -> Result<LogicalPlan> {
    let at = second.span;
    let window = join_window(query, at)?;
    let first = bind_event(&query.from, catalog)?;
    let other = bind_event(second, catalog)?;
    check_aliases(query, second, (&first, &other))?;
    // The first stream's columns bind as carried ones, so every expression
    // tells which stream it reads (see `side_of`).
    let sides = vec![
        Side { event: &first, alias: query.from.alias.clone(), carried: true },
        Side { event: &other, alias: second.alias.clone(), carried: false },
    ];
    let names = [sides[0].display_name(), sides[1].display_name()];
    let binder = Binder::new(sides, catalog.kernel());

    let mut fields = Fields::default();
    let SplitWhere { filters, keys, residual } = split_where(&binder, query, &mut fields, &names, at)?;
    let items = select_exprs(query);
    let is_aggregate = !query.group_by.is_empty() || has_aggregate(query);
    let (body, order_by) = if is_aggregate { binder.aggregate_body(query)? } else { binder.row_body(query)? };
    // Where a split error points when an expression has no place of its own.
    let first_item =
        items.first().copied().ok_or_else(|| Error::query(Stage::Bind, "SELECT needs columns", Some(at)))?;
    let (aggregate, columns, having, join_order_by) = match &body {
        QueryBody::Rows { columns: bound } => split_rows(bound, &order_by, &items, &mut fields)?,
        QueryBody::Aggregate { .. } => split_aggregate(query, &body, &order_by, first_item, &mut fields)?,
    };
    let left = fields.sides[0].len();
    let residual = residual.into_iter().map(|e| offset_second(e, left)).reduce(|l, r| PostExpr::Binary {
        op: super::BinaryOp::And,
        left: Box::new(l),
        right: Box::new(r),
        ty: DataType::Bool,
    });
    let (aggregate, columns) = offset_outputs(aggregate, columns, left);
    let select_span = select_span(query);
    let side_plan = |i: usize, event: &super::BoundEvent| LogicalPlan {
        event: event.clone(),
        join: None,
        filter: and_all(filters[i].clone()),
        body: QueryBody::Rows { columns: fields.record(i) },
        window: None,
        select_span,
        order_by: vec![],
        limit: None,
        stream_join: None,
        union: vec![],
    };
    let tp_btf = binder.tp_btf_sides()?;
    let attached = |i: usize, e: &super::BoundEvent| super::btf_args::attach_as(e.clone(), tp_btf[i]);
    let sides = [side_plan(0, &attached(0, &first)), side_plan(1, &attached(1, &other))];
    Ok(LogicalPlan {
        event: first.clone(),
        join: None,
        filter: None,
        body,
        window: Some(window),
        select_span,
        order_by,
        limit: query.limit.as_ref().map(super::post::limit_value).transpose()?,
        union: vec![],
        stream_join: Some(Box::new(StreamJoin {
            sides,
            names,
            keys,
            residual,
            aggregate,
            columns,
            having,
            order_by: join_order_by,
        })),
    })
}

/// A stream joined with itself needs an alias per side, and different ones.
fn check_aliases(
    query: &Query,
    second: &EventRef,
    (first, other): (&super::BoundEvent, &super::BoundEvent),
) -> Result<()> {
    if first.name == other.name
        && (query.from.alias.is_none() || second.alias.is_none() || query.from.alias == second.alias)
    {
        return Err(Error::query(
            Stage::Bind,
            "joining a stream with itself needs two different aliases (FROM ev a, ev b)",
            Some(second.span),
        ));
    }
    Ok(())
}

/// The SELECT list's expressions (aliased or not).
fn select_exprs(query: &Query) -> Vec<&Expr> {
    query
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e),
            _ => None,
        })
        .collect()
}

/// The outputs over the joined row, whose second stream's fields come after
/// the `left` fields of the first: its references moved by `left`.
fn offset_outputs(
    aggregate: Option<JoinAggregate>,
    columns: Vec<OutputColumn<PostExpr>>,
    left: usize,
) -> (Option<JoinAggregate>, Vec<OutputColumn<PostExpr>>) {
    let joined = |e: PostExpr| offset_second(e, left);
    match aggregate {
        Some(a) => {
            let keys = a.keys.into_iter().map(joined).collect();
            let aggs = a.aggs.into_iter().map(|(f, arg, ty)| (f, arg.map(joined), ty)).collect();
            (Some(JoinAggregate { keys, aggs }), columns)
        }
        None => (None, columns.into_iter().map(|c| OutputColumn { source: joined(c.source), ..c }).collect()),
    }
}

/// The join's window: WINDOW(time, …) only (count windows of two streams do
/// not line up), and no JOIN … ON beside the two streams.
fn join_window(query: &Query, at: Span) -> Result<Window> {
    if let Some(j) = query.joins.first() {
        return Err(Error::query(
            Stage::Bind,
            "a query either joins two streams (FROM a, b) or pairs start and end events (JOIN … ON), not both",
            Some(j.span),
        ));
    }
    match query.window {
        Some(w) if w.kind == WindowKind::Time => {
            Ok(Window { kind: w.kind, size: w.size, step: w.step, span: Some(w.span) })
        }
        Some(w) => Err(Error::query(
            Stage::Bind,
            "a join of two streams needs a time window: count windows of two streams do not line up",
            Some(w.span),
        )),
        None => Err(Error::query(
            Stage::Bind,
            "a join of two event streams needs WINDOW(time, SIZE_MS[, STEP_MS]): rows meet within a window \
                 (for enter→exit pairs use FROM start s JOIN end e ON s.tid = e.tid)",
            Some(at),
        )),
    }
}

/// WHERE of a two-stream join, split.
struct SplitWhere {
    /// Conjuncts that read one stream only: each stream's kernel filter.
    filters: [Vec<ScalarExpr>; 2],
    /// Equalities between the streams: the join keys (one at least).
    keys: Vec<JoinKey>,
    /// The rest, over the joined row (user space).
    residual: Vec<PostExpr>,
}

/// Splits WHERE's conjuncts into each stream's filters, the join keys and the
/// residual; a join without a key between the streams is refused.
fn split_where(
    binder: &Binder,
    query: &Query,
    fields: &mut Fields,
    names: &[String; 2],
    at: Span,
) -> Result<SplitWhere> {
    let mut filters: [Vec<ScalarExpr>; 2] = [vec![], vec![]];
    let mut keys = vec![];
    let mut residual = vec![];
    for c in query.selection.iter().flat_map(sql_conjuncts) {
        if let Some(key) = key_of(binder, c, fields)? {
            keys.push(key);
            continue;
        }
        for bound in conjuncts(binder.condition(c, "WHERE")?) {
            match side_of(&bound) {
                Some(true) => filters[0].push(uncarry(bound)),
                Some(false) => filters[1].push(bound),
                None => residual.push(fields.split(&bound, c)?),
            }
        }
    }
    if keys.is_empty() {
        let span = query.selection.as_ref().and_then(|w| Span::from_sql(w.span())).or(Some(at));
        return Err(Error::query(
            Stage::Bind,
            format!(
                "a join of two streams needs an equality between them in WHERE, e.g. {0}.pid = {1}.pid",
                names[0], names[1]
            ),
            span,
        ));
    }
    Ok(SplitWhere { filters, keys, residual })
}

/// What a stream join's SELECT computes in user space: the aggregate (if
/// any), the output columns, HAVING and ORDER BY, over the joined row.
type JoinSelect = (Option<JoinAggregate>, Vec<OutputColumn<PostExpr>>, Option<PostExpr>, Vec<SortKey>);

/// A row join's outputs: each column split into the streams' record fields
/// and the expression over them.
fn split_rows(
    bound: &[OutputColumn<ScalarExpr>],
    order_by: &[SortKey<GroupRef>],
    items: &[&Expr],
    fields: &mut Fields,
) -> Result<JoinSelect> {
    let mut columns = vec![];
    for (c, e) in bound.iter().zip(items) {
        columns.push(OutputColumn { name: c.name.clone(), ty: c.ty, source: fields.split(&c.source, e)? });
    }
    // A row query's ORDER BY names its outputs, which read no key or aggregate.
    let order_by = order_by.iter().map(|k| SortKey { expr: k.expr.clone().map_refs(&|r| r.input(0)), desc: k.desc });
    Ok((None, columns, None, order_by.collect()))
}

/// An aggregate join's keys and aggregates over the joined row (only the
/// aggregates user space merges exactly), its outputs, HAVING and ORDER BY
/// over them.
fn split_aggregate(
    query: &Query,
    body: &QueryBody,
    order_by: &[SortKey<GroupRef>],
    first_item: &Expr,
    fields: &mut Fields,
) -> Result<JoinSelect> {
    let QueryBody::Aggregate { keys, aggs, columns, having } = body else {
        unreachable!("called for an aggregate body")
    };
    let mut post_keys = vec![];
    for (k, e) in keys.iter().zip(query.group_by.iter().chain(std::iter::repeat(first_item))) {
        post_keys.push(fields.split(k, e)?);
    }
    let mut post_aggs = vec![];
    for a in aggs {
        if !matches!(
            a.func,
            AggFunc::Count | AggFunc::Sum | AggFunc::Min | AggFunc::Max | AggFunc::Avg | AggFunc::CountDistinct
        ) {
            return Err(Error::query(
                Stage::Bind,
                format!(
                    "{a} over a join of two streams is not supported yet: over joined rows ebq computes \
                     COUNT, SUM, MIN, MAX, AVG and COUNT(DISTINCT)"
                ),
                select_span(query),
            ));
        }
        let arg = a.arg.as_ref().map(|x| fields.split(x, first_item)).transpose()?;
        post_aggs.push((a.func, arg, a.ty()));
    }
    let nkeys = keys.len();
    let to_inputs = move |e: GroupExpr| e.map_refs(&|r| r.input(nkeys));
    let columns = columns
        .iter()
        .map(|c| OutputColumn { name: c.name.clone(), ty: c.ty, source: to_inputs(c.source.clone()) })
        .collect();
    let order_by = order_by.iter().map(|k| SortKey { expr: to_inputs(k.expr.clone()), desc: k.desc }).collect();
    let aggregate = JoinAggregate { keys: post_keys, aggs: post_aggs };
    Ok((Some(aggregate), columns, having.clone().map(to_inputs), order_by))
}

fn select_span(q: &Query) -> Option<Span> {
    q.projection.iter().filter_map(|item| Span::from_sql(item.span())).reduce(Span::union)
}

fn has_aggregate(q: &Query) -> bool {
    q.projection.iter().any(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => super::expr::contains_aggregate(e),
        _ => false,
    }) || q.having.is_some()
}

/// `a AND (b AND c)` → [a, b, c], on the SQL tree so each keeps its position.
fn sql_conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            let mut v = sql_conjuncts(left);
            v.extend(sql_conjuncts(right));
            v
        }
        Expr::Nested(inner) => sql_conjuncts(inner),
        other => vec![other],
    }
}

/// `x = y` with `x` over one stream and `y` over the other: a join key.
/// Strings are keys too (compared in user space, where two string columns can
/// meet; a program can only compare a string with a literal).
fn key_of(binder: &Binder, c: &Expr, fields: &mut Fields) -> Result<Option<JoinKey>> {
    let Expr::BinaryOp { left, op: BinaryOperator::Eq, right } = c else { return Ok(None) };
    let (Ok(l), Ok(r)) = (binder.scalar(left), binder.scalar(right)) else { return Ok(None) };
    let (l, r) = match (side_of(&l), side_of(&r)) {
        (Some(true), Some(false)) => (l, r),
        (Some(false), Some(true)) => (r, l),
        _ => return Ok(None),
    };
    let ty = match (l.ty(), r.ty()) {
        (DataType::Str { cap }, DataType::Str { cap: other }) => DataType::Str { cap: cap.max(other) },
        (a, b) if a.is_int() && b.is_int() => super::expr::arithmetic_type(&l, &r),
        (a, b) if a == b => a,
        (a, b) => return Err(err(c, format!("cannot compare {a} with {b}"))),
    };
    Ok(Some(JoinKey { left: fields.index(0, uncarry(l)), right: fields.index(1, r), ty }))
}

/// The record fields each stream's program sends: `time` first, then every
/// one-stream expression the join reads, without repeats.
struct Fields {
    sides: [Vec<ScalarExpr>; 2],
}

impl Default for Fields {
    fn default() -> Self {
        let time = ScalarExpr::Column { source: super::ColumnSource::System(SystemColumn::Time), ty: DataType::U64 };
        Fields { sides: [vec![time.clone()], vec![time]] }
    }
}

/// Marks an input of the second stream until the first stream's field count
/// is known (see [`offset_second`]).
const SECOND: usize = 1 << 40;

impl Fields {
    /// The field index of `e` (a one-stream expression, as its own program reads it).
    fn index(&mut self, side: usize, e: ScalarExpr) -> usize {
        let fields = &mut self.sides[side];
        fields.iter().position(|f| *f == e).unwrap_or_else(|| {
            fields.push(e);
            fields.len() - 1
        })
    }

    /// `e` over the joined row: each largest part that reads one stream (or
    /// none) becomes a field of that stream's record, the rest is computed
    /// in user space.
    fn split(&mut self, e: &ScalarExpr, at: &Expr) -> Result<PostExpr> {
        let input = |side: usize, index: usize, ty| PostExpr::Ref(Input { index: index + side * SECOND, ty });
        match side_of(e) {
            Some(true) => return Ok(input(0, self.index(0, uncarry(e.clone())), e.ty())),
            Some(false) => return Ok(input(1, self.index(1, e.clone()), e.ty())),
            None => {}
        }
        let mut cols = vec![];
        e.typed_columns(&mut cols);
        if cols.is_empty() {
            return Ok(input(0, self.index(0, e.clone()), e.ty()));
        }
        Ok(match e {
            ScalarExpr::Binary { op, left, right, ty, .. } => PostExpr::Binary {
                op: *op,
                left: Box::new(self.split(left, at)?),
                right: Box::new(self.split(right, at)?),
                ty: *ty,
            },
            ScalarExpr::Not(x) => PostExpr::Not(Box::new(self.split(x, at)?)),
            ScalarExpr::Neg(x) => PostExpr::Neg(Box::new(self.split(x, at)?)),
            ScalarExpr::Cast { .. } => {
                return Err(err(at, "CAST over columns of both streams is not supported; cast one stream's column"))
            }
            ScalarExpr::UserRead { .. } | ScalarExpr::UserStrlen(_) => {
                return Err(err(at, "a user_…() read is made at one event: its address must come from one stream"))
            }
            _ => {
                return Err(err(
                    at,
                    "CASE over columns of both streams is not supported; compute it from one stream's columns",
                ))
            }
        })
    }

    /// The record of stream `side` as a row query's columns.
    fn record(&self, side: usize) -> Vec<OutputColumn<ScalarExpr>> {
        self.sides[side].iter().map(|e| OutputColumn { name: e.to_string(), ty: e.ty(), source: e.clone() }).collect()
    }
}

/// Numbers the second stream's inputs after the first stream's `left` fields.
fn offset_second(e: PostExpr, left: usize) -> PostExpr {
    let again = |x: Box<PostExpr>| Box::new(offset_second(*x, left));
    match e {
        PostExpr::Ref(Input { index, ty }) if index >= SECOND => {
            PostExpr::Ref(Input { index: index - SECOND + left, ty })
        }
        PostExpr::Binary { op, left: l, right: r, ty } => PostExpr::Binary { op, left: again(l), right: again(r), ty },
        PostExpr::Not(x) => PostExpr::Not(again(x)),
        PostExpr::Neg(x) => PostExpr::Neg(again(x)),
        PostExpr::SyscallName { nr, names } => PostExpr::SyscallName { nr: again(nr), names },
        PostExpr::Cgroup(what, x) => PostExpr::Cgroup(what, again(x)),
        PostExpr::DevStr(x) => PostExpr::DevStr(again(x)),
        PostExpr::LinuxName(which, x) => PostExpr::LinuxName(which, again(x)),
        PostExpr::PartName { disk, partno } => PostExpr::PartName { disk: again(disk), partno: again(partno) },
        PostExpr::ReqFlags { flags, names } => PostExpr::ReqFlags { flags: again(flags), names },
        other => other,
    }
}
