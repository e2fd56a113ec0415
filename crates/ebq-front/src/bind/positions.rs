//! `GROUP BY 1`: a position names a SELECT item, as `ORDER BY 1` does (a
//! constant key would put every event in one group, which nobody means).
//!
//! ```text
//! SELECT fd, COUNT(*) FROM … GROUP BY 1   →   … GROUP BY fd
//! ```

use super::expr::contains_aggregate;
use crate::error::{Error, Result, Span, Stage};
use crate::parse::Query;
use sqlparser::ast::{Expr, SelectItem, Spanned, Value};

/// The query with GROUP BY positions replaced by their SELECT items, or
/// `None` when GROUP BY has no position.
pub(super) fn resolve_group_by(q: &Query) -> Result<Option<Query>> {
    let is_position = |e: &Expr| matches!(e, Expr::Value(v) if matches!(v.value, Value::Number(..)));
    if !q.group_by.iter().any(is_position) {
        return Ok(None);
    }
    let mut group_by = vec![];
    for g in &q.group_by {
        let Expr::Value(v) = g else {
            group_by.push(g.clone());
            continue;
        };
        let Value::Number(n, _) = &v.value else {
            group_by.push(g.clone());
            continue;
        };
        let bad = |msg: String| Error::query(Stage::Bind, msg, Span::from_sql(g.span()));
        let p = n.parse::<usize>().ok().filter(|p| (1..=q.projection.len()).contains(p)).ok_or_else(|| {
            bad(format!("GROUP BY position {n} is out of range: there are {} SELECT items", q.projection.len()))
        })?;
        match &q.projection[p - 1] {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } if is_position(e) => {
                return Err(bad(format!(
                    "GROUP BY {p} names SELECT item {p}, the constant {e}: a constant key puts every event in \
                     one group; name a column or an expression over the event"
                )))
            }
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } if !contains_aggregate(e) => {
                group_by.push(e.clone())
            }
            _ => return Err(bad(format!("GROUP BY {p} names SELECT item {p}, which is not a plain expression"))),
        }
    }
    Ok(Some(Query { group_by, ..q.clone() }))
}
