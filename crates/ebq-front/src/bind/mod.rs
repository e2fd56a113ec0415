//! Bind: [`Query`] + [`Catalog`] → typed [`LogicalPlan`].
//!
//! Resolves the event and every column, checks types, and separates group
//! keys from aggregates. Anything that binds must compile and load: the checks
//! here are the user-facing ones, the planner adds BPF resource limits.

mod aliases;
mod at_exit;
mod btf_args;
mod cgroup_columns;
mod chain;
mod describe_args;
mod describe_view;
mod expand;
mod expr;
mod file;
mod hist;
mod int_sets;
mod join;
mod linux_names;
mod logical;
mod names;
mod positions;
mod post;
mod probe;
mod req_flags;
mod stream_join;
mod top_k;
mod union;
mod union_all;
pub mod usdt;
mod user_str;

pub use btf_args::RawArg;
pub use describe_args::{describe_args, describe_members, Described};
pub use describe_view::describe_view;
pub(crate) use join::{and_all, split_start_only};
pub use linux_names::{LinuxName, LINUX_NAME_CAP};
pub(crate) use logical::IsOperation;
pub use logical::*;
pub use union::MAX_BRANCHES as MAX_UNION_BRANCHES;

use crate::catalog::{Catalog, CatalogError, FieldKind, SystemColumn, TracepointFormat};
use crate::error::{Error, QueryError, Result, Span, Stage};
use crate::host::KernelInfo;
use crate::parse::{EventName, EventRef, Expr, Query, SelectItem};
use crate::types::DataType;
use sqlparser::ast::Spanned;
use std::borrow::Cow;

/// Deepest expression the binder accepts; deeper ones would exhaust the
/// binder's stack (and the verifier's patience) long before they mean anything.
pub const MAX_EXPR_DEPTH: u32 = 256;

/// Most values in one `IN (…)` list.
pub const MAX_IN_LIST: usize = 256;

/// Capacity given to `__data_loc` strings (file names, command lines): bytes incl. NUL.
pub const DATA_LOC_STRING_CAP: u16 = 64;

/// Capacity of a string read from user memory (`const char *` system call
/// arguments, `str(ptr)`): bytes incl. NUL. Longer strings are cut. 128 is twice
/// bpftrace's default and leaves a JOIN room to carry a file name and a comm
/// inside the 400-byte stack budget; `str(ptr, len)` asks for fewer.
pub const USER_STRING_CAP: u16 = 128;

/// How many entries of an `argv` array are joined into its string (execve's
/// `argv`): a bounded loop the verifier can walk.
pub const ARGV_MAX_ARGS: u32 = 8;

/// Bytes at the end of an `argv` string that hold where its entries 1..=7
/// start, one byte each (`codegen::user_str::argv`), so user space can
/// quote each entry; the joined text ends before them.
pub const ARGV_STARTS_BYTES: u32 = ARGV_MAX_ARGS;

/// Bytes past an `argv`'s capacity its reader keeps so that each entry is
/// read with a constant size (`codegen::user_str::argv`).
pub const ARGV_SLACK_BYTES: u16 = 64;

/// Binds a parsed query against the catalog.
pub fn bind(query: &Query, catalog: &Catalog) -> Result<LogicalPlan> {
    let query = &*desugar(query)?;
    if let (Some(call), true) = (at_exit::first_call(query), query.stream.is_some() || !query.union.is_empty()) {
        return Err(expr::err(
            &call,
            "str_at_exit() works in a query over one syscalls.sys_enter_* event, not in a UNION ALL or a join of two streams",
        ));
    }
    if let Some(second) = &query.stream {
        return stream_join::bind_stream_join(query, second, catalog);
    }
    union::check(query)?;
    if !query.union.is_empty() && query.joins.is_empty() {
        return union_all::bind_union(query, catalog);
    }
    bind_events(query, catalog, &[])
}

/// The query with its shorthand spelled out: DISTINCT as GROUP BY, GROUP BY
/// positions as the SELECT items they name, bare cgroup names as their calls.
/// Each rewrite runs once, in this order, so one's output is never read as
/// another's input: DISTINCT's keys are expressions, a literal among them is
/// a constant and not a position (`SELECT DISTINCT 1, comm`).
fn desugar(query: &Query) -> Result<Cow<'_, Query>> {
    let mut q = Cow::Borrowed(query);
    if q.distinct {
        q = Cow::Owned(distinct_as_group_by(&q)?);
    } else if let Some(resolved) = positions::resolve_group_by(&q)? {
        q = Cow::Owned(resolved);
    }
    if let Some(rewritten) = cgroup_columns::rewrite(&q)? {
        q = Cow::Owned(rewritten);
    }
    Ok(q)
}

/// Binds a query over one event (or a JOIN of two). `union` is non-empty for
/// the outer query of a top-level union ([`union_all`]): its columns, by name
/// and type, are then the only columns besides the system ones.
fn bind_events(query: &Query, catalog: &Catalog, union: &[(String, DataType)]) -> Result<LogicalPlan> {
    match chain::split_chain(query, catalog)? {
        Some((single, chain)) => bind_sides(&single, catalog, union, &[], Some(&chain)),
        None => bind_sides(query, catalog, union, &[], None),
    }
}

/// Binds a plain or JOIN query (`union` as for [`bind_events`]). `raw[i]` says side `i` is known to attach as
/// `tp_btf` (it reads raw arguments): it has no format record, so a name that is
/// both a record field and a system column (`comm` at block_rq_issue) means the
/// system column there. A first pass binds without knowing; when a side read raw
/// arguments and record fields both, a second pass binds with that knowledge,
/// and only a field no system column stands in for stays an error. `chain`:
/// the middle event of a chained JOIN, taken out of `query` ([`chain`]).
fn bind_sides(
    query: &Query,
    catalog: &Catalog,
    union: &[(String, DataType)],
    raw: &[bool],
    chain: Option<&chain::Chain>,
) -> Result<LogicalPlan> {
    let exit = match query.joins.is_empty() && query.union.is_empty() {
        true => at_exit::exit_event(query, catalog)?,
        false => None,
    };
    let from = bind_event(&query.from, catalog)?;
    let joined = bind_end(query, catalog)?;
    let sides = match &joined {
        None => vec![Side { event: &from, alias: query.from.alias.clone(), carried: exit.is_some() }],
        Some((end, j)) => vec![
            Side { event: &from, alias: query.from.alias.clone(), carried: true },
            Side { event: end, alias: j.event.alias.clone(), carried: false },
        ],
    };
    let mut binder = Binder::new(sides, catalog.kernel()).knowing_raw(raw);
    binder.union = union.to_vec();
    binder.start_columns = union::start_columns(query);
    binder.middle = chain.map(|c| c.placeholders.clone()).unwrap_or_default();
    binder.at_exit = exit.as_ref().map(|_| Default::default());
    let mut filter = match &query.selection {
        Some(e) => Some(binder.condition(&*binder.with_aliases(e, query, aliases::Clause::Where)?, "WHERE")?),
        None => None,
    };
    let mut join = match &joined {
        Some((_, j)) => {
            let (mut bound, rest) = join::bind_join(&binder, j, &mut filter)?;
            filter = rest;
            bound.middle = chain.map(|c| c.middle_of(&bound)).transpose()?;
            Some(bound)
        }
        None => None,
    };
    let is_aggregate = is_aggregate_query(query);
    let limit = query.limit.as_ref().map(post::limit_value).transpose()?;
    let (body, order_by) = if is_aggregate { binder.aggregate_body(query)? } else { binder.row_body(query)? };
    let window = query_window(query, is_aggregate)?;
    let select_span = query.projection.iter().filter_map(|item| Span::from_sql(item.span())).reduce(Span::union);
    let mut tp_btf = match binder.tp_btf_sides() {
        Err(_) if raw.is_empty() && binder.raw_readers().contains(&true) => {
            let readers = binder.raw_readers();
            drop(binder);
            return bind_sides(query, catalog, union, &readers, chain);
        }
        other => other?,
    };
    if let (Some(join), false) = (join.as_mut(), query.union.is_empty()) {
        tp_btf[0] = union::bind_starts(&binder, query, catalog, join)?;
    }
    if let Some((exit, span)) = &exit {
        let (paired, rest) = binder.at_exit_join(exit, filter.take(), *span);
        (join, filter) = (Some(paired), rest);
    }
    drop(binder);
    let end = exit.map(|(exit, _)| exit).or(joined.map(|(end, _)| end));
    let (event, join) = match (end, join) {
        (Some(end), Some(mut join)) => {
            join.start = btf_args::attach_as(join.start, tp_btf[0]);
            (btf_args::attach_as(end, tp_btf.get(1).copied().unwrap_or(false)), Some(join))
        }
        (_, join) => (btf_args::attach_as(from, tp_btf[0]), join),
    };
    Ok(LogicalPlan {
        event,
        join,
        filter,
        body,
        window,
        select_span,
        order_by,
        limit,
        stream_join: None,
        union: vec![],
    })
}

/// The end event of a JOIN, bound, with its JOIN clause; `None` without JOIN.
fn bind_end<'q>(query: &'q Query, catalog: &Catalog) -> Result<Option<(BoundEvent, &'q crate::parse::Join)>> {
    match query.joins.as_slice() {
        [] => Ok(None),
        [j] => Ok(Some((bind_event(&j.event, catalog)?, j))),
        [_, extra, ..] => Err(Error::query(
            Stage::Bind,
            "a query pairs at most two events: one JOIN (start event JOIN end event)",
            Some(extra.span),
        )),
    }
}

/// Whether the query aggregates: GROUP BY, or an aggregate in the SELECT list.
fn is_aggregate_query(query: &Query) -> bool {
    !query.group_by.is_empty()
        || query.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => expr::contains_aggregate(e),
            _ => false,
        })
}

/// The query's WINDOW, which only an aggregating query may have.
fn query_window(query: &Query, is_aggregate: bool) -> Result<Option<Window>> {
    match query.window {
        Some(w) if !is_aggregate => Err(Error::query(
            Stage::Bind,
            "WINDOW groups aggregates; a query without aggregates streams every event as it happens",
            Some(w.span),
        )),
        Some(w) => Ok(Some(Window { kind: w.kind, size: w.size, step: w.step, span: Some(w.span) })),
        None => Ok(None),
    }
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
        EventName::Tracepoint { category, name }
            if crate::catalog::expand::Expansion::named(category, name).is_some() =>
        {
            let x = crate::catalog::expand::Expansion::named(category, name).expect("checked");
            expand::bind_expansion(from, x, catalog)
        }
        EventName::Tracepoint { category, name } => match catalog.tracepoint(category, name) {
            Ok(format) => Ok(BoundEvent { name: from.name.clone(), format, source: EventSource::Tracepoint }),
            Err(CatalogError::UnknownEvent { event, suggestions }) => {
                let mut e = QueryError::new(Stage::Bind, format!("unknown event `{event}`"), Some(from.span));
                if let Some(first) = suggestions.first() {
                    // The fix in the query's own notation: `category.name`.
                    let fix = first.strip_prefix("tracepoint:").map_or(first.clone(), |t| t.replacen(':', ".", 1));
                    e = e.with_help(format!("did you mean {}?", suggestions.join(", "))).with_fix(fix);
                } else {
                    e = e.with_help("`ebq events 'PATTERN'` lists the events of this kernel");
                }
                Err(Error::Query(e))
            }
            Err(other) => Err(other.into()),
        },
        _ => probe::bind_probe(from, catalog),
    }
}

/// One event a query reads: the FROM event, or either side of a JOIN.
struct Side<'a> {
    event: &'a BoundEvent,
    alias: Option<String>,
    /// The JOIN's start event: its columns reach the end program through the
    /// pairing map, so they bind as [`ColumnSource::Start`].
    carried: bool,
}

impl Side<'_> {
    fn format(&self) -> &TracepointFormat {
        &self.event.format
    }

    /// Is `qualifier` a name for this event?
    fn is_named(&self, qualifier: &str) -> bool {
        self.alias.as_deref() == Some(qualifier)
            || matches!(&self.event.name, EventName::Tracepoint { name, .. } if name == qualifier)
    }

    /// The name qualified columns of this side show in plans (`e.fd`).
    fn display_name(&self) -> String {
        match (&self.alias, &self.event.name) {
            (Some(a), _) => a.clone(),
            (None, EventName::Tracepoint { name, .. }) => name.clone(),
            (None, other) => other.to_string(),
        }
    }

    /// A column of this side, as seen by the program that produces rows.
    fn carry(&self, e: ScalarExpr) -> ScalarExpr {
        if !self.carried {
            return e;
        }
        let qualifier = self.display_name();
        e.map_columns(&|c| ColumnSource::Start { name: format!("{qualifier}.{}", c.name()), column: Box::new(c) })
    }
}

/// Binding context: the events in scope and the nesting depth.
struct Binder<'a> {
    sides: Vec<Side<'a>>,
    /// What file columns, raw arguments and `syscall_nr()` consult.
    kernel: &'a dyn KernelInfo,
    /// Current expression nesting, bounded by [`MAX_EXPR_DEPTH`].
    depth: std::cell::Cell<u32>,
    /// Per side: record columns or raw arguments read, which decides how it attaches.
    reads: std::cell::RefCell<Vec<btf_args::SideReads>>,
    /// Per side: known to attach as `tp_btf`, so system columns win over record
    /// fields of the same name (see [`bind_sides`]).
    raw: Vec<bool>,
    /// The columns of a top-level union, when this binds the query over one
    /// ([`union_all`]): they and the system columns are all it can read.
    union: Vec<(String, DataType)>,
    /// When the JOIN's start side (side 0) is a union: its columns, each with
    /// the path it selects in the first branch ([`union::start_columns`]).
    start_columns: Vec<(String, Vec<sqlparser::ast::Ident>)>,
    /// A chained JOIN's middle aggregates: each placeholder identifier the
    /// rewritten SELECT names one by, and the carried column it binds as.
    middle: Vec<(String, ScalarExpr)>,
    /// A query over one `sys_enter_*` event that calls `str_at_exit()`
    /// ([`at_exit`]): the strings those calls read, so far. `None` elsewhere.
    at_exit: Option<std::cell::RefCell<Vec<ColumnSource>>>,
}

impl<'a> Binder<'a> {
    fn new(sides: Vec<Side<'a>>, kernel: &'a dyn KernelInfo) -> Binder<'a> {
        let reads = std::cell::RefCell::new(sides.iter().map(|_| Default::default()).collect());
        let raw = vec![false; sides.len()];
        Binder {
            sides,
            kernel,
            depth: std::cell::Cell::new(0),
            reads,
            raw,
            union: vec![],
            start_columns: vec![],
            middle: vec![],
            at_exit: None,
        }
    }

    /// The binder, told which sides attach as `tp_btf` (`raw[i]`; missing: not known).
    fn knowing_raw(mut self, raw: &[bool]) -> Binder<'a> {
        for (known, r) in self.raw.iter_mut().zip(raw) {
            *known = *r;
        }
        self
    }
}

impl Binder<'_> {
    /// Notes that side `side` read `column` at `span` (see [`btf_args::SideReads`]).
    fn note_read(&self, side: &Side, column: &ScalarExpr, span: Option<Span>) {
        let Some(i) = self.sides.iter().position(|s| std::ptr::eq(s, side)) else { return };
        if let ScalarExpr::Column { source, ty } = column {
            self.reads.borrow_mut()[i].note(source, span);
            self.reads.borrow_mut()[i].remember(source, *ty);
        }
    }

    /// Per side, whether it read a raw argument so far.
    fn raw_readers(&self) -> Vec<bool> {
        self.reads.borrow().iter().map(|r| r.raw.is_some()).collect()
    }

    /// Per side, whether its program attaches as `tp_btf` (it reads raw arguments);
    /// an error for a side that reads raw arguments and record fields both.
    fn tp_btf_sides(&self) -> Result<Vec<bool>> {
        let reads = self.reads.borrow();
        self.sides.iter().zip(reads.iter()).map(|(side, r)| r.tp_btf(side.event)).collect()
    }

    fn row_body(&self, q: &Query) -> Result<(QueryBody, Vec<SortKey<GroupRef>>)> {
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
                SelectItem::Wildcard(w) if self.sides.len() > 1 => {
                    return Err(Error::query(
                        Stage::Bind,
                        "SELECT * over a JOIN is ambiguous; name the columns (e.g. e.fd, x.ret)",
                        Span::from_sql(w.span()),
                    ))
                }
                SelectItem::Wildcard(_) if !self.union.is_empty() => {
                    for (name, _) in &self.union {
                        let s = union_all::lookup(&self.union, name).expect("a union column");
                        columns.push(OutputColumn { name: name.clone(), ty: s.ty(), source: s });
                    }
                }
                SelectItem::Wildcard(w) => {
                    for f in &self.sides[0].format().fields {
                        if let Some(s) =
                            self.field_column(f.name.as_str(), None).ok().filter(|_| f.kind != FieldKind::Unsupported)
                        {
                            self.note_read(&self.sides[0], &s, Span::from_sql(w.span()));
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
        names::shorten(&mut columns, &q.projection);
        Ok((QueryBody::Rows { columns }, order_by))
    }

    fn aggregate_body(&self, q: &Query) -> Result<(QueryBody, Vec<SortKey<GroupRef>>)> {
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
            let g = by_alias.unwrap_or(g);
            // `GROUP BY errno_name(ret)` groups by the number; the name is given per group.
            let key = self.scalar(linux_names::named_arg(g).map_or(g, |(_, arg)| arg))?;
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
            if top_k::is_top_k(e) {
                let alias = matches!(item, SelectItem::ExprWithAlias { .. }).then_some(name.as_str());
                columns.extend(self.top_k_columns(q, e, alias, &mut aggs)?);
                continue;
            }
            let source = self.post_expr(e, &keys, &mut aggs)?;
            if let PostExpr::Int { .. } | PostExpr::Float(_) = source {
                return Err(Error::query(Stage::Bind, "a constant column is not supported", Span::from_sql(e.span())));
            }
            columns.push(OutputColumn { name, ty: source.ty(), source });
        }
        let having = match &q.having {
            Some(h) => {
                let p = self.post_expr(&*self.with_aliases(h, q, aliases::Clause::Having)?, &keys, &mut aggs)?;
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
        names::shorten(&mut columns, &q.projection);
        Ok((QueryBody::Aggregate { keys, aggs, columns, having }, order_by))
    }

    /// `e` with the SELECT aliases that name no column replaced by their expressions.
    fn with_aliases<'e>(&self, e: &'e Expr, q: &Query, clause: aliases::Clause) -> Result<std::borrow::Cow<'e, Expr>> {
        aliases::resolve(e, &q.projection, &|name| self.lookup(name).is_some(), clause)
    }

    /// Looks a bare column name up: event fields first, then system columns;
    /// `None` when no event has it, or (in a JOIN) both do.
    fn lookup(&self, name: &str) -> Option<ScalarExpr> {
        let mut found = self.sides.iter().filter_map(|side| self.side_lookup(side, name));
        let first = found.next();
        if found.next().is_some() {
            return None;
        }
        first
    }

    /// Column `name` of one side: a field, else a system column, else a file
    /// column, else a raw argument (last: it parses the kernel's BTF, ~20 ms, which
    /// queries naming only the others never need). A side known to attach as
    /// `tp_btf` has no record, so there a system column, a raw argument, then a
    /// file column come before a field of the same name (`comm` at
    /// block_rq_issue is the system column; `ret` at iomap_dio_complete the raw
    /// `ssize_t ret`; `dev` at iomap_dio_rw_begin the file's, from `iocb`).
    fn side_lookup(&self, side: &Side, name: &str) -> Option<ScalarExpr> {
        if !self.union.is_empty() {
            return union_all::lookup(&self.union, name);
        }
        let raw = self.sides.iter().position(|s| std::ptr::eq(s, side)).is_some_and(|i| self.raw[i]);
        let field = || field_column(side.format(), name, None).ok();
        let system = || {
            SystemColumn::from_name(name)
                .map(|s| ScalarExpr::Column { source: ColumnSource::System(s), ty: s.data_type() })
        };
        let arg = || btf_args::bare_arg(self.kernel, side.event, name);
        let file = || file::file_lookup(self.kernel, side.format(), name);
        let plain = if raw {
            system().or_else(arg).or_else(file).or_else(field)
        } else {
            field().or_else(system).or_else(file).or_else(arg)
        }?;
        Some(side.carry(plain))
    }

    /// The field `name` (element `index` of an array field) of the one event
    /// that has a field so named.
    fn field_column(&self, name: &str, index: Option<u32>) -> std::result::Result<ScalarExpr, String> {
        let with_field: Vec<&Side> = self.sides.iter().filter(|s| s.format().field(name).is_some()).collect();
        match with_field.as_slice() {
            [side] => field_column(side.format(), name, index).map(|e| side.carry(e)),
            [] => Err(format!("unknown column `{name}`")),
            [a, b, ..] => Err(format!(
                "`{name}` is a column of both joined events; write {}.{name} or {}.{name}",
                a.display_name(),
                b.display_name()
            )),
        }
    }

    /// All column names, for suggestions.
    fn column_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.sides.iter().flat_map(|s| s.format().fields.iter().map(|f| f.name.clone())).collect();
        names.extend(SystemColumn::ALL.iter().map(|s| s.name().to_string()));
        names.extend(self.sides.iter().flat_map(|s| btf_args::arg_names(self.kernel, s.event)));
        names.extend(self.sides.iter().flat_map(|s| file::file_column_names(s.format())).map(String::from));
        names
    }

    /// The event named `qualifier`, if any.
    fn side_named(&self, qualifier: &str) -> Option<&Side<'_>> {
        self.sides.iter().find(|s| s.is_named(qualifier))
    }

    /// How the events are named in messages.
    fn events_text(&self) -> String {
        self.sides.iter().map(|s| s.event.name.to_string()).collect::<Vec<_>>().join(" or ")
    }
}

/// The field `name` (element `index` of an array field) of `format`, typed.
fn field_column(format: &TracepointFormat, name: &str, index: Option<u32>) -> std::result::Result<ScalarExpr, String> {
    let f = format.field(name).ok_or_else(|| format!("unknown column `{name}`"))?;
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
        (FieldKind::UserStr | FieldKind::UserArgv, None) => Ok(ScalarExpr::Column {
            source: field(f.offset, f.size, f.kind.clone()),
            ty: DataType::Str { cap: USER_STRING_CAP },
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

#[cfg(test)]
mod tests;
