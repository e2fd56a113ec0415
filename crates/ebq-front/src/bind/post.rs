//! Binding what runs in user space: expressions over aggregates, HAVING,
//! ORDER BY and LIMIT.

use super::expr::{binary_op, contains_aggregate, err, span_of};
use super::{AggCall, BinaryOp, Binder, GroupExpr, GroupRef, OutputColumn, PostExpr, PostRef, ScalarExpr, SortKey};
use crate::error::{Error, QueryError, Result, Stage};
use crate::parse::{Expr, OrderByExpr};
use crate::types::DataType;
use sqlparser::ast::{FunctionArgExpr, UnaryOperator, Value};
use std::sync::Arc;

impl Binder<'_> {
    /// Binds an expression over group keys and aggregates; new aggregate calls
    /// are appended to `aggs`.
    pub(super) fn post_expr(&self, e: &Expr, keys: &[ScalarExpr], aggs: &mut Vec<AggCall>) -> Result<GroupExpr> {
        if let Some(call) = self.aggregate_call_here(e)? {
            let ty = call.ty();
            let index = aggs.iter().position(|a| *a == call).unwrap_or_else(|| {
                aggs.push(call);
                aggs.len() - 1
            });
            return Ok(PostExpr::Ref(GroupRef::Agg { index, ty }));
        }
        if !contains_aggregate(e) {
            if let Ok(s) = self.scalar(e) {
                if let Some(index) = keys.iter().position(|k| *k == s) {
                    return Ok(PostExpr::Ref(GroupRef::Key { index, ty: s.ty() }));
                }
                if let ScalarExpr::Int { value, ty } = s {
                    return Ok(PostExpr::Int { value, ty });
                }
            }
        }
        if let Expr::Function(f) = e {
            if let Some(bound) = self.post_function(f, e, keys, aggs) {
                return bound;
            }
        }
        match e {
            Expr::Nested(inner) => self.post_expr(inner, keys, aggs),
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) if n.contains('.') || n.contains('e') || n.contains('E') => {
                    n.parse::<f64>().map(PostExpr::Float).map_err(|_| err(e, format!("`{n}` is not a number")))
                }
                _ => Err(err(e, format!("literal `{e}` cannot be used here"))),
            },
            Expr::UnaryOp { op, expr } => self.post_unary(e, op, expr, keys, aggs),
            Expr::BinaryOp { left, op, right } => {
                let Some(op) = binary_op(op) else {
                    return Err(err(e, format!("operator `{op}` is not supported")));
                };
                let l = self.post_expr(left, keys, aggs)?;
                let r = self.post_expr(right, keys, aggs)?;
                let ty = post_type(e, op, &l, &r)?;
                Ok(PostExpr::Binary { op, left: Box::new(l), right: Box::new(r), ty })
            }
            // Functions are resolved before GROUP BY is checked: an unknown
            // name, or a known one used wrongly, says so first.
            Expr::Function(f) if !super::expr::is_known_function(f) => Err(super::expr::unknown_function(f)),
            Expr::Function(_) if !contains_aggregate(e) && self.scalar(e).is_err() => {
                Err(self.scalar(e).expect_err("checked"))
            }
            _ => Err(self.not_grouped(e)),
        }
    }

    /// `NOT x`, `-x` or `+x` over a bound post-aggregation expression.
    fn post_unary(
        &self,
        e: &Expr,
        op: &UnaryOperator,
        expr: &Expr,
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Result<GroupExpr> {
        let inner = self.post_expr(expr, keys, aggs)?;
        if let DataType::Hist { .. } = inner.ty() {
            return Err(err(e, format!("`{op}` cannot be applied to a histogram")));
        }
        match op {
            UnaryOperator::Not if inner.ty() == DataType::Bool => Ok(PostExpr::Not(Box::new(inner))),
            UnaryOperator::Minus if inner.ty() != DataType::Bool => Ok(PostExpr::Neg(Box::new(inner))),
            UnaryOperator::Plus if inner.ty() != DataType::Bool => Ok(inner),
            _ => Err(err(e, format!("`{op}` cannot be applied to {}", inner.ty()))),
        }
    }

    /// The functions that run in user space over keys and aggregates
    /// (`syscall_name`, the cgroup functions, `req_flags`, `part_name`, the
    /// Linux name functions, `dev_str`); `None` for any other function.
    fn post_function(
        &self,
        f: &sqlparser::ast::Function,
        e: &Expr,
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Option<Result<GroupExpr>> {
        let name = f.name.to_string();
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("syscall_name") {
            return Some(
                self.number_arg(f, e, "syscall_name", "a system call number", keys, aggs)
                    .map(|nr| PostExpr::SyscallName { nr, names: Arc::new(self.kernel.syscalls().clone()) }),
            );
        }
        if let Some(what) = cgroup_info(f) {
            return Some(
                self.number_arg(f, e, what.name(), "a cgroup id (the `cgroup` column)", keys, aggs)
                    .map(|id| PostExpr::Cgroup(what, id)),
            );
        }
        if is("req_flags") {
            return Some(self.req_flags(f, e, keys, aggs));
        }
        if is("part_name") {
            return Some(self.part_name(f, e, keys, aggs));
        }
        if let Some(which) = super::LinuxName::of_function(&name) {
            return Some(
                self.number_arg(f, e, which.function(), which.argument(), keys, aggs)
                    .map(|number| PostExpr::LinuxName(which, number)),
            );
        }
        if is("dev_str") {
            return Some(self.number_arg(f, e, "dev_str", "a device number", keys, aggs).map(PostExpr::DevStr));
        }
        None
    }

    /// `req_flags(cmd_flags)`: decoded with the kernel's own enums (BTF).
    fn req_flags(
        &self,
        f: &sqlparser::ast::Function,
        e: &Expr,
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Result<GroupExpr> {
        let flags = self.number_arg(f, e, "req_flags", "a block request's cmd_flags", keys, aggs)?;
        let names = self.kernel.btf().ok_or_else(|| "this kernel has no BTF".to_string());
        match names.and_then(super::req_flags::ReqFlagNames::from_btf) {
            Ok(names) => Ok(PostExpr::ReqFlags { flags, names: Arc::new(names) }),
            Err(why) => Err(err(e, format!("req_flags decodes with the kernel's own enums: {why}"))),
        }
    }

    /// `part_name(disk, partno)`: a partition's name from its disk's name and number.
    fn part_name(
        &self,
        f: &sqlparser::ast::Function,
        e: &Expr,
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Result<GroupExpr> {
        let usage = "part_name takes a disk's name and a partition number: \
                     part_name(rq.q.disk.disk_name, rq.part.__bd_flags.counter & 255)";
        let [FunctionArgExpr::Expr(disk), FunctionArgExpr::Expr(partno)] = super::expr::function_args(f).as_slice()
        else {
            return Err(err(e, usage));
        };
        let (d, n) = (self.post_expr(disk, keys, aggs)?, self.post_expr(partno, keys, aggs)?);
        if !matches!(d.ty(), DataType::Str { .. }) {
            return Err(err(disk, format!("{usage}; `{disk}` is {}", d.ty())));
        }
        if !n.ty().is_int() {
            return Err(err(partno, format!("{usage}; `{partno}` is {}", n.ty())));
        }
        Ok(PostExpr::PartName { disk: Box::new(d), partno: Box::new(n) })
    }

    /// Why `e` cannot be used after GROUP BY: neither a key nor inside an
    /// aggregate (with the aggregate to use in place as help), or the
    /// reason it does not bind at all.
    fn not_grouped(&self, e: &Expr) -> Error {
        let q = QueryError::new(
            Stage::Bind,
            format!("`{e}` must appear in GROUP BY or be inside an aggregate"),
            span_of(e),
        );
        // The help proposes only what binds for the expression's type.
        // The fix is the aggregate, in place (GROUP BY is elsewhere in the text).
        let help = match self.scalar(e) {
            Err(why) if !contains_aggregate(e) => return why,
            Ok(s) if s.ty().is_int() => {
                Some((format!("add `GROUP BY {e}`, or use e.g. MAX({e})"), format!("MAX({e})")))
            }
            Ok(s) if matches!(s.ty(), DataType::Str { .. }) => Some((
                format!("add `GROUP BY {e}`, or count its values with COUNT(DISTINCT {e})"),
                format!("COUNT(DISTINCT {e})"),
            )),
            _ => None,
        };
        Error::Query(match help {
            Some((h, fix)) => q.with_help(h).with_fix(fix),
            None => q,
        })
    }

    /// The one integer argument of a user-space function such as `syscall_name(nr)`.
    fn number_arg(
        &self,
        f: &sqlparser::ast::Function,
        e: &Expr,
        name: &str,
        what: &str,
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Result<Box<GroupExpr>> {
        let [FunctionArgExpr::Expr(arg)] = super::expr::function_args(f).as_slice() else {
            return Err(err(e, format!("{name} takes one argument, {what}")));
        };
        let inner = self.post_expr(arg, keys, aggs)?;
        if !inner.ty().is_int() {
            return Err(err(arg, format!("{name} needs {what}; `{arg}` is {}", inner.ty())));
        }
        Ok(Box::new(inner))
    }

    fn aggregate_call_here(&self, e: &Expr) -> Result<Option<AggCall>> {
        match e {
            Expr::Function(_) => self.aggregate_call(e),
            _ => Ok(None),
        }
    }

    /// ORDER BY for an aggregate query: output names, positions, or expressions.
    pub(super) fn order_by_post(
        &self,
        order: &[OrderByExpr],
        columns: &[OutputColumn<GroupExpr>],
        keys: &[ScalarExpr],
        aggs: &mut Vec<AggCall>,
    ) -> Result<Vec<SortKey<GroupRef>>> {
        order
            .iter()
            .map(|o| {
                let expr = match output_ref(&o.expr, columns.iter().map(|c| (c.name.as_str(), c.ty)))? {
                    Some(out) => out,
                    None => self.post_expr(&o.expr, keys, aggs)?,
                };
                if let DataType::Hist { .. } = expr.ty() {
                    return Err(err(
                        &o.expr,
                        format!(
                            "cannot ORDER BY a histogram (`{}`); order by a number such as COUNT(*) or P99(…)",
                            o.expr
                        ),
                    ));
                }
                Ok(SortKey { expr, desc: matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc)) })
            })
            .collect()
    }

    /// ORDER BY for a row query: output names, positions, or expressions equal to an output.
    pub(super) fn order_by_rows(
        &self,
        order: &[OrderByExpr],
        columns: &[OutputColumn<ScalarExpr>],
    ) -> Result<Vec<SortKey<GroupRef>>> {
        order
            .iter()
            .map(|o| {
                let expr = match output_ref(&o.expr, columns.iter().map(|c| (c.name.as_str(), c.ty)))? {
                    Some(out) => out,
                    None => {
                        let s = self.scalar(&o.expr)?;
                        let index = columns.iter().position(|c| c.source == s).ok_or_else(|| {
                            err(
                                &o.expr,
                                format!(
                                    "ORDER BY `{}` must be one of the selected columns in a query without aggregates",
                                    o.expr
                                ),
                            )
                        })?;
                        PostExpr::Output { index, ty: columns[index].ty }
                    }
                };
                Ok(SortKey { expr, desc: matches!(o.options.sort, Some(sqlparser::ast::OrderBySort::Desc)) })
            })
            .collect()
    }
}

/// `ORDER BY name` (an output column or alias) or `ORDER BY 2` (1-based position).
fn output_ref<'a, R>(e: &Expr, columns: impl Iterator<Item = (&'a str, DataType)>) -> Result<Option<PostExpr<R>>> {
    let columns: Vec<(&str, DataType)> = columns.collect();
    match e {
        Expr::Identifier(id) => Ok(columns
            .iter()
            .position(|(n, _)| *n == id.value)
            .map(|index| PostExpr::Output { index, ty: columns[index].1 })),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => match n.parse::<usize>() {
                Ok(p) if p >= 1 && p <= columns.len() => {
                    Ok(Some(PostExpr::Output { index: p - 1, ty: columns[p - 1].1 }))
                }
                _ => Err(err(e, format!("ORDER BY position {n} is out of range: there are {} columns", columns.len()))),
            },
            _ => Ok(None),
        },
        _ => Ok(None),
    }
}

/// The result type of a user-space binary operation.
fn post_type<R: PostRef>(e: &Expr, op: BinaryOp, l: &PostExpr<R>, r: &PostExpr<R>) -> Result<DataType> {
    let (lt, rt) = (l.ty(), r.ty());
    let numeric = |t: DataType| t.is_int() || t == DataType::Float;
    if matches!(lt, DataType::Hist { .. }) || matches!(rt, DataType::Hist { .. }) {
        return Err(err(
            e,
            format!("`{e}`: a histogram cannot be compared or computed with; select it as a column, or use P50/P99/QUANTILE for a number"),
        ));
    }
    match op {
        BinaryOp::And | BinaryOp::Or if lt == DataType::Bool && rt == DataType::Bool => Ok(DataType::Bool),
        BinaryOp::And | BinaryOp::Or => Err(err(e, "AND/OR need conditions on both sides")),
        _ if op.is_comparison() && numeric(lt) && numeric(rt) => Ok(DataType::Bool),
        _ if op.is_comparison() && matches!((lt, rt), (DataType::Str { .. }, DataType::Str { .. })) => {
            Ok(DataType::Bool)
        }
        _ if op.is_comparison() => Err(err(e, format!("cannot compare {lt} with {rt}"))),
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod
            if lt == DataType::Float || rt == DataType::Float =>
        {
            if numeric(lt) && numeric(rt) {
                Ok(DataType::Float)
            } else {
                Err(err(e, format!("`{}` needs numbers", op.c_op())))
            }
        }
        _ if lt.is_int() && rt.is_int() => {
            Ok(if lt.is_signed() || rt.is_signed() { DataType::I64 } else { DataType::U64 })
        }
        _ => Err(err(e, format!("`{}` needs integers; got {lt} and {rt}", op.c_op()))),
    }
}

/// LIMIT's value: a non-negative integer literal.
pub(super) fn limit_value(e: &Expr) -> Result<u64> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<u64>().map_err(|_| err(e, "LIMIT needs a whole number from 0 to 2^64-1")),
            _ => Err(err(e, "LIMIT needs a whole number")),
        },
        _ => Err(err(e, "LIMIT needs a whole number")),
    }
}

/// `cgroup_path(…)` or `container_id(…)`: which one.
fn cgroup_info(f: &sqlparser::ast::Function) -> Option<super::logical::CgroupInfo> {
    use super::logical::CgroupInfo;
    let name = f.name.to_string().to_ascii_lowercase();
    [CgroupInfo::Path, CgroupInfo::ContainerId].into_iter().find(|c| c.name() == name)
}
