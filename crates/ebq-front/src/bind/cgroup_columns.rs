//! `cgroup_path` and `container_id` as columns: names of the task's cgroup that
//! only user space can know, so the kernel groups by the cgroup id and each
//! group's id is named once per window (cached, [`crate::host::cgroups`]).
//!
//! ```text
//! SELECT cgroup_path, COUNT(*) … GROUP BY cgroup_path
//!   →   SELECT cgroup_path(cgroup) AS cgroup_path, COUNT(*) … GROUP BY cgroup
//! ```
//!
//! Bare names at the top of a SELECT item, a GROUP BY key or an ORDER BY key are
//! rewritten; anywhere else (WHERE runs in the kernel, which cannot name a group)
//! the binder refuses them with the reason. A row query (no aggregates) has no
//! groups to name: it is refused at the name, pointing to GROUP BY.

use super::expr::contains_aggregate;
use crate::error::{Error, Result, Span, Stage};
use crate::parse::{EbqDialect, Query};
use sqlparser::ast::{Expr, Ident, SelectItem};
use sqlparser::parser::Parser;

/// The names that become `name(cgroup)`.
pub(super) const NAMES: [&str; 2] = ["cgroup_path", "container_id"];

/// `ident` when it is a bare `cgroup_path` / `container_id`.
fn bare(e: &Expr) -> Option<&Ident> {
    match e {
        Expr::Identifier(id) if id.quote_style.is_none() && NAMES.contains(&id.value.to_ascii_lowercase().as_str()) => {
            Some(id)
        }
        _ => None,
    }
}

/// `name(cgroup)`, its identifiers placed where `id` stood (errors point there).
fn call(id: &Ident) -> Expr {
    let text = format!("{}(cgroup)", id.value.to_ascii_lowercase());
    let mut e = Parser::new(&EbqDialect)
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_expr())
        .expect("a function call over a column parses");
    if let Expr::Function(f) = &mut e {
        for part in &mut f.name.0 {
            if let sqlparser::ast::ObjectNamePart::Identifier(name) = part {
                name.span = id.span;
            }
        }
        if let sqlparser::ast::FunctionArguments::List(list) = &mut f.args {
            for arg in &mut list.args {
                if let sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(Expr::Identifier(
                    c,
                ))) = arg
                {
                    c.span = id.span;
                }
            }
        }
    }
    e
}

/// The query with bare `cgroup_path` / `container_id` rewritten, or `None` when it has none.
pub(super) fn rewrite(q: &Query) -> Result<Option<Query>> {
    let in_select = q.projection.iter().find_map(|item| match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => bare(e),
        _ => None,
    });
    let in_keys = q.group_by.iter().chain(q.order_by.iter().map(|o| &o.expr)).find_map(bare);
    let Some(first) = in_select.or(in_keys) else { return Ok(None) };
    let aggregate = !q.group_by.is_empty()
        || q.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => contains_aggregate(e),
            _ => false,
        });
    if !aggregate {
        return Err(Error::query(
            Stage::Bind,
            format!(
                "`{0}` is named in user space per group: aggregate and group by it \
                 (SELECT {0}, COUNT(*) … GROUP BY {0}), or select `cgroup`, the id",
                first.value
            ),
            Span::from_sql(first.span),
        ));
    }
    let mut out = q.clone();
    for item in &mut out.projection {
        match item {
            SelectItem::UnnamedExpr(e) => {
                if let Some(id) = bare(e).cloned() {
                    *item = SelectItem::ExprWithAlias { expr: call(&id), alias: id };
                }
            }
            SelectItem::ExprWithAlias { expr, .. } => {
                if let Some(id) = bare(expr).cloned() {
                    *expr = call(&id);
                }
            }
            _ => {}
        }
    }
    for key in &mut out.group_by {
        if let Some(id) = bare(key).cloned() {
            // The kernel groups by the id; the name is a function of it.
            *key = Expr::Identifier(Ident { value: "cgroup".into(), quote_style: None, span: id.span });
        }
    }
    for o in &mut out.order_by {
        if let Some(id) = bare(&o.expr).cloned() {
            o.expr = call(&id);
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use crate::bind::{bind, PostExpr, QueryBody};
    use crate::catalog::Catalog;

    fn bound(sql: &str) -> crate::Result<crate::bind::LogicalPlan> {
        bind(&crate::parse::parse_query(sql)?, &Catalog::fixture())
    }

    #[test]
    fn bare_names_group_by_the_id_and_are_named_per_group() {
        let plan = bound(
            "SELECT cgroup_path, container_id, COUNT(*) AS n FROM syscalls.sys_enter_pread64 \
             GROUP BY cgroup_path ORDER BY cgroup_path",
        )
        .unwrap();
        let QueryBody::Aggregate { keys, columns, .. } = &plan.body else { panic!("{plan:?}") };
        assert_eq!(keys.len(), 1, "one key, the cgroup id: {keys:?}");
        assert_eq!(keys[0].to_string(), "cgroup");
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cgroup_path", "container_id", "n"]);
        assert!(matches!(columns[0].source, PostExpr::Cgroup(crate::bind::CgroupInfo::Path, _)));
        assert!(matches!(columns[1].source, PostExpr::Cgroup(crate::bind::CgroupInfo::ContainerId, _)));
        assert_eq!(plan.order_by.len(), 1);
        // The same query with the functions binds to the same plan.
        let spelled = bound(
            "SELECT cgroup_path(cgroup) AS cgroup_path, container_id(cgroup) AS container_id, COUNT(*) AS n \
             FROM syscalls.sys_enter_pread64 GROUP BY cgroup ORDER BY cgroup_path(cgroup)",
        )
        .unwrap();
        assert_eq!(format!("{:?}", plan.body), format!("{:?}", spelled.body));
    }

    #[test]
    fn a_row_query_is_pointed_to_group_by() {
        let sql = "SELECT pid, cgroup_path FROM syscalls.sys_enter_pread64";
        let Err(crate::Error::Query(q)) = bound(sql) else { panic!("bound") };
        assert!(q.message.starts_with("`cgroup_path` is named in user space per group"), "{}", q.message);
        let span = q.span.expect("positioned");
        assert_eq!((span.start.column, span.end.column), (13, 24));
        let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE cgroup_path = '/x'";
        let Err(crate::Error::Query(q)) = bound(sql) else { panic!("bound") };
        assert!(q.message.contains("the kernel cannot filter or compute on it"), "{}", q.message);
    }
}
