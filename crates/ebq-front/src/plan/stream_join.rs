//! Plan of a two-stream join (`FROM a, b … WINDOW(time, …)`): each stream is
//! an ordinary row plan with its own program and ring buffer; user space
//! assigns rows to windows by their `time`, and joins a window once both
//! streams have delivered everything up to its end.

use super::{plan, window_panes, Combine, PhysicalPlan, PlanOptions, UserColumn, UserPlan, UserSource};
use crate::bind::{AggFunc, JoinAggregate, JoinKey, LogicalPlan, PostExpr, StreamJoin};
use crate::catalog::Catalog;
use crate::error::Result;
use std::fmt::Write;

/// How long after its end a window waits for rows still in flight (an
/// event's `time` is taken before its record is reserved and committed).
pub const JOIN_GRACE_MS: u64 = 50;

/// How the rows of two streams (the plan's two row programs) are joined.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowJoin {
    /// How each stream's records decode to rows (its program's row plan);
    /// field 0 of each row is `time`.
    pub streams: [UserPlan; 2],
    /// The streams' names (aliases).
    pub names: [String; 2],
    /// The joined row's fields (`a.fd`, …), for EXPLAIN.
    pub joined_names: Vec<String>,
    /// Equality keys between the two records.
    pub keys: Vec<JoinKey>,
    /// The other cross-stream conditions, over the joined row.
    pub residual: Option<PostExpr>,
    /// GROUP BY and aggregates over each window's joined rows; the user
    /// plan then works on the group rows.
    pub aggregate: Option<JoinAggregate>,
    /// Window length in nanoseconds.
    pub size_ns: u64,
    /// Window step in nanoseconds (= size for tumbling windows).
    pub step_ns: u64,
    /// A window is joined once the clock is this far past its end and both
    /// ring buffers have been drained; rows arriving later are counted as late.
    pub grace_ns: u64,
}

/// Plans `logical`, whose `stream_join` is `join`: the two streams' row
/// plans, and a user plan over the joined row (the first stream's fields,
/// then the second's) that filters, projects, sorts and limits each window.
pub(super) fn plan_stream_join(
    sql: &str,
    logical: &LogicalPlan,
    join: &StreamJoin,
    catalog: &Catalog,
    options: &PlanOptions,
) -> Result<PhysicalPlan> {
    let window = logical.window.expect("the binder requires a window");
    let panes = window_panes(&window)?;
    let [first, second] = [plan(sql, &join.sides[0], catalog, options)?, plan(sql, &join.sides[1], catalog, options)?];
    let sides = [first.user, second.user];
    let mut joined_names = vec![];
    for (side, name) in sides.iter().zip(&join.names) {
        joined_names.extend(side.columns.iter().map(|c| format!("{name}.{}", c.name)));
    }
    // The user plan's inputs: the joined row, or with GROUP BY the group row.
    let inputs = match &join.aggregate {
        None => (0..joined_names.len()).map(UserSource::Row).collect(),
        Some(a) => (0..a.keys.len())
            .map(UserSource::Key)
            .chain(a.aggs.iter().enumerate().map(|(j, (f, _, _))| match f {
                AggFunc::Count => UserSource::Count,
                _ => UserSource::Row(j),
            }))
            .collect(),
    };
    let window_join = WindowJoin {
        names: join.names.clone(),
        joined_names: joined_names.clone(),
        keys: join.keys.clone(),
        residual: join.residual.clone(),
        aggregate: join.aggregate.clone(),
        size_ns: window.size * 1_000_000,
        step_ns: window.step * 1_000_000,
        grace_ns: JOIN_GRACE_MS * 1_000_000,
        streams: sides,
    };
    let user = UserPlan {
        combine: Combine::WindowJoin(Box::new(window_join)),
        inputs,
        input_names: join.aggregate.as_ref().map_or_else(|| joined_names.clone(), |a| group_names(a, &joined_names)),
        having: join.having.clone(),
        columns: join
            .columns
            .iter()
            .map(|c| UserColumn { name: c.name.clone(), ty: c.ty, expr: c.source.clone() })
            .collect(),
        order_by: join.order_by.clone(),
        limit: logical.limit,
        window_panes: panes,
        distributions: vec![],
    };
    let programs = first.programs.into_iter().chain(second.programs).collect();
    Ok(PhysicalPlan { sql: sql.to_string(), programs, user })
}

impl PhysicalPlan {
    /// The plan of stream `i` of a join alone: its program and the decoding
    /// of its records to rows (what runs it and reads its ring buffer).
    pub fn stream(&self, join: &WindowJoin, i: usize) -> PhysicalPlan {
        PhysicalPlan { sql: self.sql.clone(), programs: vec![self.programs[i].clone()], user: join.streams[i].clone() }
    }
}

impl WindowJoin {
    /// EXPLAIN of the whole join; `top` is the plan that holds it.
    pub(super) fn explain(&self, top: &PhysicalPlan) -> String {
        let mut s = String::new();
        for (program, name) in top.programs.iter().zip(&self.names) {
            let _ = writeln!(s, "Stream {name}: its own program and ring buffer");
            for line in program.explain().lines().filter(|l| !l.starts_with("[user]   Decode")) {
                let _ = writeln!(s, "  {line}");
            }
            let _ = writeln!(s, "  [user]   Decode     records → rows, kept by time in panes of one window step");
        }
        let (size, step) = (self.size_ns / 1_000_000, self.step_ns / 1_000_000);
        let shape = if size == step {
            format!("tumbling time {size} ms")
        } else {
            format!("sliding time {size} ms, every {step} ms")
        };
        let _ = writeln!(
            s,
            "[user]   Window     {shape}, by each row's time from the query's start; a window is joined {} ms after \
             its end once both ring buffers are drained (later rows count as late)",
            self.grace_ns / 1_000_000
        );
        let names = &self.joined_names;
        let left = self.streams[0].columns.len();
        let keys: Vec<String> =
            self.keys.iter().map(|k| format!("{} = {}", names[k.left], names[left + k.right])).collect();
        let _ = writeln!(s, "[user]   Join       hash join on [{}] within each window", keys.join(", "));
        let text = |e: &PostExpr| super::explain::post_text(e, names, &[]);
        if let Some(r) = &self.residual {
            let _ = writeln!(s, "[user]   Filter     {}", text(r));
        }
        if let Some(a) = &self.aggregate {
            let names = group_names(a, names);
            let (keys, aggs) = names.split_at(a.keys.len());
            let _ = writeln!(
                s,
                "[user]   Aggregate  keys=[{}] values=[{}] over each window's joined rows",
                keys.join(", "),
                aggs.join(", ")
            );
        }
        top.user_explain(&mut s, false);
        s
    }
}

/// The group row's fields as text: the keys, then the aggregates, over the
/// joined row's field names.
fn group_names(a: &JoinAggregate, joined: &[String]) -> Vec<String> {
    let text = |e: &PostExpr| super::explain::post_text(e, joined, &[]);
    let aggs = a.aggs.iter().map(|(f, arg, _)| match (f, arg) {
        (AggFunc::CountDistinct, Some(x)) => format!("COUNT(DISTINCT {})", text(x)),
        (f, Some(x)) => format!("{f}({})", text(x)),
        (f, None) => format!("{f}(*)"),
    });
    a.keys.iter().map(text).chain(aggs).collect()
}
