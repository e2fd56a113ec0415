//! Expression binding: sqlparser `Expr` → typed [`ScalarExpr`] / [`AggCall`].

use super::{AggCall, AggFunc, BinaryOp, Binder, ScalarExpr, StrPattern};
use crate::catalog::suggest_column;
use crate::error::{Error, QueryError, Result, Span, Stage};
use crate::parse::Expr;
use crate::types::DataType;
use sqlparser::ast::{
    AccessExpr, BinaryOperator, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Spanned, Subscript,
    UnaryOperator, Value,
};

/// A literal: an unsigned integer, a boolean or a string constant.
fn literal(e: &Expr, v: &Value) -> Result<ScalarExpr> {
    match v {
        Value::Number(n, _) => match n.parse::<u64>() {
            Ok(value) => Ok(ScalarExpr::Int { value, ty: DataType::U64 }),
            Err(_) => Err(err(e, format!("`{n}` is not an integer from 0 to 18446744073709551615"))),
        },
        Value::Boolean(b) => Ok(ScalarExpr::Bool(*b)),
        Value::SingleQuotedString(s) => string_constant(e, s),
        other => Err(err(e, format!("literal `{other}` is not supported"))),
    }
}

/// Why function `name` cannot be in a kernel expression, if it cannot: an
/// aggregate, or a function computed in user space per group (it says how
/// to use it).
fn user_space_function(e: &Expr, f: &Function, name: &str) -> Option<Error> {
    if agg_func(f).is_some() {
        return Some(err(e, format!("aggregate `{e}` is not allowed here")));
    }
    if name == "dev_str" {
        return Some(err(
            e,
            "dev_str() is computed in user space, per group: GROUP BY the device and select dev_str(dev)",
        ));
    }
    if name == "req_flags" {
        return Some(err(
            e,
            "req_flags() is computed in user space, per group: GROUP BY the flags and select \
             req_flags(rq.cmd_flags)",
        ));
    }
    if name == "syscall_name" {
        return Some(err(
            e,
            "syscall_name() is computed in user space, per group: GROUP BY the number and \
             select syscall_name(id)",
        ));
    }
    if let Some((which, arg)) = super::linux_names::named_arg(e) {
        let f = which.function();
        return Some(err(
            e,
            format!(
                "{f}() is named in user space, per group: GROUP BY `{arg}` and select {f}({arg}), \
                 or filter with WHERE {f}({arg}) = 'NAME'"
            ),
        ));
    }
    if name == "cgroup_path" || name == "container_id" {
        return Some(err(
            e,
            format!("{name}() is computed in user space, per group: GROUP BY cgroup and select {name}(cgroup)"),
        ));
    }
    None
}

pub(super) fn span_of(e: &impl Spanned) -> Option<Span> {
    Span::from_sql(e.span())
}

/// The span of an expression, from its operands when sqlparser records none
/// for the expression itself (RLIKE, SIMILAR TO, tuples, IS NULL …).
fn expr_span(e: &Expr) -> Option<Span> {
    if let Some(s) = span_of(e) {
        return Some(s);
    }
    let parts: Vec<&Expr> = match e {
        Expr::RLike { expr, pattern, .. }
        | Expr::SimilarTo { expr, pattern, .. }
        | Expr::ILike { expr, pattern, .. }
        | Expr::Like { expr, pattern, .. } => vec![expr, pattern],
        Expr::IsNull(x)
        | Expr::IsNotNull(x)
        | Expr::IsTrue(x)
        | Expr::IsFalse(x)
        | Expr::IsNotTrue(x)
        | Expr::IsNotFalse(x) => vec![x],
        Expr::Cast { expr, .. } => vec![expr],
        Expr::Tuple(items) => items.iter().collect(),
        _ => vec![],
    };
    parts.into_iter().filter_map(expr_span).reduce(Span::union)
}

pub(super) fn err(e: &impl Spanned, message: impl Into<String>) -> Error {
    Error::query(Stage::Bind, message, span_of(e))
}

/// [`err`] for expressions, falling back to the operands' spans.
fn expr_err(e: &Expr, message: impl Into<String>) -> Error {
    Error::query(Stage::Bind, message, expr_span(e))
}

/// Every function ebq knows, lower case, for "unknown function" and its "did you mean".
const FUNCTIONS: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "approx_count_distinct",
    "hist",
    "lhist",
    "quantile",
    "p50",
    "p90",
    "p99",
    "p999",
    "starts_with",
    "syscall_nr",
    "enum_value",
    "io_uring_op",
    "print_flag",
    "str",
    "str_at_exit",
    "user_i8",
    "user_u8",
    "user_i16",
    "user_u16",
    "user_i32",
    "user_u32",
    "user_i64",
    "user_u64",
    "user_strlen",
    "env_int",
    "syscall_name",
    "dev_str",
    "req_flags",
    "part_name",
    "cgroup_path",
    "container_id",
    "errno_name",
    "signal_name",
];

/// True when `f` names a function ebq knows (whatever its arguments).
pub(super) fn is_known_function(f: &Function) -> bool {
    FUNCTIONS.contains(&f.name.to_string().to_ascii_lowercase().as_str())
}

/// "unknown function `x`", at the name, with the closest known names or the list.
pub(super) fn unknown_function(f: &Function) -> Error {
    let name = f.name.to_string();
    let close = crate::catalog::suggest_column(&name.to_ascii_lowercase(), FUNCTIONS);
    let fix = close.first().map(|c| c.to_string());
    let help = if close.is_empty() {
        "functions: COUNT, SUM, MIN, MAX, AVG, HIST, LHIST, QUANTILE, P50, P90, P99, P999, starts_with(column, 'prefix'), \
         syscall_nr('name'), enum_value('enum', 'ENUMERATOR'), io_uring_op('READ'), print_flag('category.event', 'field', 'NAME'), \
         str(ptr[, len]), str_at_exit(ptr[, len]), user_u64(addr) (user_i8 … user_u64), user_strlen(ptr), env_int('NAME'[, 'NAME2', …]); per group: syscall_name(nr), errno_name(ret), signal_name(sig), \
         dev_str(dev), req_flags(cmd_flags), part_name(disk, partno), cgroup_path(cgroup), container_id(cgroup)"
            .to_string()
    } else {
        format!("did you mean {}?", close.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", "))
    };
    let q = QueryError::new(Stage::Bind, format!("unknown function `{name}`"), span_of(&f.name)).with_help(help);
    Error::Query(match fix {
        Some(fix) => q.with_fix(fix),
        None => q,
    })
}

/// Aggregate function name → function, if it is one.
pub(super) fn agg_func(f: &Function) -> Option<AggFunc> {
    match f.name.to_string().to_ascii_uppercase().as_str() {
        "COUNT" => Some(AggFunc::Count),
        "SUM" => Some(AggFunc::Sum),
        "MIN" => Some(AggFunc::Min),
        "MAX" => Some(AggFunc::Max),
        "AVG" => Some(AggFunc::Avg),
        "APPROX_COUNT_DISTINCT" => Some(AggFunc::ApproxCountDistinct),
        // Bound as three aggregates by bind/top_k.rs, and only as a SELECT item.
        super::top_k::NAME => Some(AggFunc::ApproxTopK { k: 0, part: super::TopKPart::Key }),
        // Histograms and quantiles take parameters; bind/hist.rs binds the real function.
        name if super::hist::is_histogram_name(name) => Some(AggFunc::Hist(crate::hist::Log2::Floor)),
        _ => None,
    }
}

/// True when `e` contains an aggregate call anywhere.
pub(super) fn contains_aggregate(e: &Expr) -> bool {
    match e {
        Expr::Function(f) => {
            agg_func(f).is_some()
                || function_args(f).iter().any(|a| matches!(a, FunctionArgExpr::Expr(x) if contains_aggregate(x)))
        }
        Expr::BinaryOp { left, right, .. } => contains_aggregate(left) || contains_aggregate(right),
        Expr::UnaryOp { expr, .. } | Expr::Nested(expr) => contains_aggregate(expr),
        _ => false,
    }
}

pub(super) fn function_args(f: &Function) -> Vec<&FunctionArgExpr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(x) => x,
                FunctionArg::Named { arg, .. } | FunctionArg::ExprNamed { arg, .. } => arg,
            })
            .collect(),
        _ => vec![],
    }
}

impl Binder<'_> {
    /// Binds an expression that must be a condition (WHERE).
    pub(super) fn condition(&self, e: &Expr, clause: &str) -> Result<ScalarExpr> {
        let s = self.scalar(e)?;
        refuse_stack(e, &s)?;
        if s.ty() != DataType::Bool {
            let q = QueryError::new(
                Stage::Bind,
                format!("{clause} needs a true/false condition; `{e}` is {}", s.ty()),
                span_of(e),
            );
            // `x != 0` binds only for a number.
            let q = if s.ty().is_int() {
                q.with_help(format!("compare it, e.g. `{e} != 0`")).with_fix(format!("{e} != 0"))
            } else {
                q
            };
            return Err(Error::Query(q));
        }
        Ok(s)
    }

    /// Binds `e` as an aggregate call; `Ok(None)` when it is not one.
    pub(super) fn aggregate_call(&self, e: &Expr) -> Result<Option<AggCall>> {
        let Expr::Function(f) = e else {
            if contains_aggregate(e) {
                return Err(err(
                    e,
                    format!(
                        "`{e}`: expressions over aggregates are not supported yet; select the aggregates themselves"
                    ),
                ));
            }
            return Ok(None);
        };
        if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
            return Err(err(
                e,
                format!("`{e}`: OVER, FILTER and WITHIN GROUP are not supported; use WINDOW(…) for windows"),
            ));
        }
        let Some(func) = agg_func(f) else {
            if contains_aggregate(e) {
                return Err(err(e, format!("`{e}`: functions of aggregates are not supported yet")));
            }
            return Ok(None);
        };
        if let AggFunc::ApproxTopK { .. } = func {
            return Err(super::top_k::misplaced(e));
        }
        if super::hist::is_histogram_name(&f.name.to_string().to_ascii_uppercase()) {
            return self.histogram_call(e, f, &function_args(f)).map(Some);
        }
        let distinct = match &f.args {
            FunctionArguments::List(list) => {
                matches!(list.duplicate_treatment, Some(sqlparser::ast::DuplicateTreatment::Distinct))
            }
            _ => false,
        };
        if distinct && func != AggFunc::Count {
            return Err(err(e, format!("{func}(DISTINCT …) is not supported; COUNT(DISTINCT …) is")));
        }
        if distinct {
            let [FunctionArgExpr::Expr(x)] = function_args(f).as_slice() else {
                return Err(err(e, "COUNT(DISTINCT …) takes one expression"));
            };
            if contains_aggregate(x) {
                return Err(err(x, "aggregates cannot be nested"));
            }
            let a = self.scalar(x)?;
            if a.ty() == DataType::Bool {
                return Err(err(x, "COUNT(DISTINCT …) needs an integer or string expression"));
            }
            return Ok(Some(AggCall { func: AggFunc::CountDistinct, arg: Some(a), weight: None }));
        }
        let args = function_args(f);
        let arg = match (func, args.as_slice()) {
            (AggFunc::Count, [FunctionArgExpr::Wildcard]) => None,
            (_, [FunctionArgExpr::Expr(x)]) => {
                if contains_aggregate(x) {
                    return Err(err(x, "aggregates cannot be nested"));
                }
                let a = self.scalar(x)?;
                if !a.ty().is_int() {
                    let hint = if func == AggFunc::ApproxCountDistinct {
                        " (COUNT(DISTINCT …) counts strings exactly)"
                    } else {
                        ""
                    };
                    return Err(err(x, format!("{func} needs an integer argument; `{x}` is {}{hint}", a.ty())));
                }
                Some(a)
            }
            _ => {
                let want = if func == AggFunc::Count { "COUNT(*) or COUNT(expr)" } else { "one argument" };
                return Err(err(e, format!("{func} takes {want}")));
            }
        };
        // COUNT(expr) counts events: columns are never NULL.
        let arg = if func == AggFunc::Count { None } else { arg };
        Ok(Some(AggCall { func, arg, weight: None }))
    }

    /// Binds a per-event scalar expression.
    pub(super) fn scalar(&self, e: &Expr) -> Result<ScalarExpr> {
        let depth = self.depth.get() + 1;
        if depth > super::MAX_EXPR_DEPTH {
            return Err(err(
                e,
                format!("expression nested too deeply (the limit is {} levels)", super::MAX_EXPR_DEPTH),
            ));
        }
        self.depth.set(depth);
        let bound = self.scalar_inner(e);
        self.depth.set(depth - 1);
        bound
    }

    /// An array subscript: a small non-negative integer literal.
    fn array_index(&self, index: &Expr) -> Result<u32> {
        match self.scalar(index)? {
            ScalarExpr::Int { value, ty } if !ty.is_signed() && value < 1 << 16 => Ok(value as u32),
            _ => Err(err(index, "an array index must be a small non-negative integer literal")),
        }
    }

    /// One expression node, by kind: each kind that needs more than a line
    /// is bound by its own method below.
    fn scalar_inner(&self, e: &Expr) -> Result<ScalarExpr> {
        match e {
            Expr::Identifier(id) => match (self.middle_placeholder(&id.value), self.union_start_bare(id)) {
                (Some(middle), _) => Ok(middle),
                (None, Some(renamed)) => renamed,
                (None, None) => self.column(&[id.value.as_str()], e),
            },
            Expr::CompoundIdentifier(parts) => match self.union_start_path(parts) {
                Some(path) => self.union_start_column(parts, &path?, e),
                None => self.path_or_column(parts, e),
            },
            Expr::CompoundFieldAccess { root, access_chain } => self.subscript(e, root, access_chain),
            Expr::Value(v) => literal(e, &v.value),
            Expr::Nested(inner) => self.scalar(inner),
            Expr::Cast { expr, data_type, format: None, .. } => self.cast(e, expr, data_type),
            Expr::UnaryOp { op, expr } => self.unary(e, op, expr),
            Expr::BinaryOp { left, op, right } => self.binary(e, left, op, right),
            Expr::Like { negated, any: false, expr, pattern, escape_char: None } => self.like(expr, pattern, *negated),
            Expr::Between { expr, negated, low, high } => self.between(e, expr, low, high, *negated),
            Expr::InList { expr, list, negated } => self.in_list(e, expr, list, *negated),
            Expr::Case { operand: Some(op), .. } => {
                Err(err(op.as_ref(), "only searched CASE is supported: CASE WHEN condition THEN value … END"))
            }
            Expr::Case { operand: None, conditions, else_result, .. } => {
                self.case(e, conditions, else_result.as_deref())
            }
            Expr::Function(f) => self.function(e, f),
            other => Err(expr_err(e, format!("`{other}` is not supported in ebq expressions"))),
        }
    }

    /// `field[i]` (an array field's element) and `e.field[i]` (one event's,
    /// as a JOIN names it).
    fn subscript(&self, e: &Expr, root: &Expr, access_chain: &[AccessExpr]) -> Result<ScalarExpr> {
        match (root, access_chain) {
            (Expr::Identifier(id), [AccessExpr::Subscript(Subscript::Index { index })]) => {
                let i = self.array_index(index)?;
                let column = self.field_column(&id.value, Some(i)).map_err(|m| err(e, m))?;
                if let Some(side) = self.sides.iter().find(|s| s.format().field(&id.value).is_some()) {
                    self.note_read(side, &column, span_of(e));
                }
                Ok(column)
            }
            // `e.args[0]`: the element of one event's array, as a JOIN names it.
            (
                Expr::Identifier(q),
                [AccessExpr::Dot(Expr::Identifier(name)), AccessExpr::Subscript(Subscript::Index { index })],
            ) => {
                let i = self.array_index(index)?;
                let q = &q.value;
                let side = self.side_named(q).ok_or_else(|| err(e, format!("unknown event alias `{q}`")))?;
                let column = super::field_column(side.format(), &name.value, Some(i)).map_err(|m| err(e, m))?;
                let column = side.carry(column);
                self.note_read(side, &column, span_of(e));
                Ok(column)
            }
            _ => Err(err(e, format!("`{e}` is not supported"))),
        }
    }

    /// `CAST(x AS type)`: integers to another integer type.
    fn cast(&self, e: &Expr, expr: &Expr, data_type: &sqlparser::ast::DataType) -> Result<ScalarExpr> {
        let inner = self.scalar(expr)?;
        let Some(ty) = cast_type(&data_type.to_string()) else {
            return Err(err(
                e,
                format!(
                    "CAST converts integers to BIGINT, INT, SMALLINT, TINYINT (… UNSIGNED), or i8 … u64; \
                     not `{data_type}`"
                ),
            ));
        };
        if !inner.ty().is_int() {
            return Err(err(e, format!("CAST converts integers; `{expr}` is {}", inner.ty())));
        }
        Ok(ScalarExpr::Cast { expr: Box::new(inner), ty })
    }

    /// `NOT b`, `-x` (a negative literal folded), `+x`.
    fn unary(&self, e: &Expr, op: &UnaryOperator, expr: &Expr) -> Result<ScalarExpr> {
        let inner = self.scalar(expr)?;
        match (op, inner) {
            (UnaryOperator::Not, s) if s.ty() == DataType::Bool => Ok(ScalarExpr::Not(Box::new(s))),
            (UnaryOperator::Minus, ScalarExpr::Int { value, .. }) if value <= 1 << 63 => {
                Ok(ScalarExpr::Int { value: value.wrapping_neg(), ty: DataType::I64 })
            }
            (UnaryOperator::Minus, s) if s.ty().is_int() => Ok(ScalarExpr::Neg(Box::new(s))),
            (UnaryOperator::Plus, s) if s.ty().is_int() => Ok(s),
            (op, s) => Err(err(e, format!("`{op}` cannot be applied to {}", s.ty()))),
        }
    }

    /// `x [NOT] LIKE 'abc'`, `'abc%'`, `'%abc'` or `'%abc%'`: matched in the kernel.
    fn like(&self, expr: &Expr, pattern: &Expr, negated: bool) -> Result<ScalarExpr> {
        let Expr::Value(v) = pattern else {
            return Err(err(pattern, "LIKE needs a string literal pattern"));
        };
        let Value::SingleQuotedString(p) = &v.value else {
            return Err(err(pattern, "LIKE needs a string literal pattern"));
        };
        let (lit, kind) = like_pattern(p).map_err(|(message, help, at)| {
            let span = span_of(pattern).map(|s| wildcard_span(s, p, at));
            Error::Query(QueryError::new(Stage::Bind, message, span).with_help(help))
        })?;
        self.string_match(expr, lit, kind, negated)
    }

    /// `x [NOT] BETWEEN lo AND hi`: `x >= lo AND x <= hi`.
    fn between(&self, e: &Expr, expr: &Expr, low: &Expr, high: &Expr, negated: bool) -> Result<ScalarExpr> {
        let x = self.scalar(expr)?;
        let lo = self.compare(e, BinaryOp::Ge, x.clone(), self.scalar(low)?)?;
        let hi = self.compare(e, BinaryOp::Le, x, self.scalar(high)?)?;
        let both = ScalarExpr::Binary {
            op: BinaryOp::And,
            left: Box::new(lo),
            right: Box::new(hi),
            ty: DataType::Bool,
            operand_ty: DataType::Bool,
        };
        Ok(if negated { ScalarExpr::Not(Box::new(both)) } else { both })
    }

    /// `x [NOT] IN (a, b, …)`: equalities ORed (string literals matched as strings).
    fn in_list(&self, e: &Expr, expr: &Expr, list: &[Expr], negated: bool) -> Result<ScalarExpr> {
        if list.len() > super::MAX_IN_LIST {
            return Err(err(
                e,
                format!("IN lists hold at most {} values; this one has {}", super::MAX_IN_LIST, list.len()),
            ));
        }
        let x = self.scalar(expr)?;
        let mut any: Option<ScalarExpr> = None;
        for item in list {
            let eq = match item {
                Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)) => self.string_match(
                    expr,
                    &v.value.clone().into_string().unwrap_or_default(),
                    StrPattern::Exact,
                    false,
                )?,
                _ => self.compare(e, BinaryOp::Eq, x.clone(), self.scalar(item)?)?,
            };
            any = Some(match any {
                None => eq,
                Some(a) => ScalarExpr::Binary {
                    op: BinaryOp::Or,
                    left: Box::new(a),
                    right: Box::new(eq),
                    ty: DataType::Bool,
                    operand_ty: DataType::Bool,
                },
            });
        }
        let any = any.ok_or_else(|| err(e, "IN needs at least one value"))?;
        Ok(if negated { ScalarExpr::Not(Box::new(any)) } else { any })
    }

    /// A searched `CASE WHEN c THEN v … [ELSE x] END`: nested conditionals of
    /// integers, or of constant strings ([`string_case`]).
    fn case(
        &self,
        e: &Expr,
        conditions: &[sqlparser::ast::CaseWhen],
        else_result: Option<&Expr>,
    ) -> Result<ScalarExpr> {
        let mut branches = vec![];
        for w in conditions {
            branches.push((self.condition(&w.condition, "CASE WHEN")?, self.scalar(&w.result)?, &w.result));
        }
        let strings = branches.iter().any(|(_, v, _)| v.is_const_str());
        let otherwise = match else_result {
            Some(x) => self.scalar(x)?,
            None if strings => ScalarExpr::Str { value: String::new(), cap: 1 },
            None => ScalarExpr::Int { value: 0, ty: DataType::U64 },
        };
        if strings || otherwise.is_const_str() {
            return string_case(e, branches, otherwise, else_result);
        }
        let mut ty = otherwise.ty();
        for (_, v, x) in &branches {
            if !v.ty().is_int() {
                return Err(err(*x, format!("CASE values must be integers; `{x}` is {}", v.ty())));
            }
            if v.ty().is_signed() {
                ty = DataType::I64;
            }
        }
        if !ty.is_int() {
            return Err(err(e, format!("CASE values must be integers; ELSE is {ty}")));
        }
        let ty = if ty.is_signed() { DataType::I64 } else { DataType::U64 };
        Ok(branches.into_iter().rev().fold(otherwise, |acc, (cond, then, _)| ScalarExpr::Cond {
            cond: Box::new(cond),
            then: Box::new(then),
            otherwise: Box::new(acc),
            ty,
        }))
    }

    /// A function call in a kernel expression: the functions computed in
    /// user space are refused with where to use them ([`user_space_function`]),
    /// the rest bound here.
    fn function(&self, e: &Expr, f: &Function) -> Result<ScalarExpr> {
        let name = f.name.to_string().to_ascii_lowercase();
        if let Some(refusal) = user_space_function(e, f, &name) {
            return Err(refusal);
        }
        match (name.as_str(), function_args(f).as_slice()) {
            ("starts_with", [FunctionArgExpr::Expr(col), FunctionArgExpr::Expr(Expr::Value(v))]) => match &v.value {
                Value::SingleQuotedString(p) => self.string_match(col, p, StrPattern::Prefix, false),
                _ => Err(err(e, "starts_with(column, 'prefix') needs a string literal prefix")),
            },
            ("starts_with", _) => {
                Err(err(e, "starts_with(column, 'prefix') takes a string column and a string literal prefix"))
            }
            ("syscall_nr", [FunctionArgExpr::Expr(arg @ Expr::Value(v))]) => match &v.value {
                Value::SingleQuotedString(n) => match self.kernel.syscalls().nr(n) {
                    Some(nr) => Ok(ScalarExpr::Int { value: nr as u64, ty: DataType::U64 }),
                    None => Err(err(arg, format!("`{n}` is not a system call of this machine"))),
                },
                _ => Err(err(e, "syscall_nr('name') needs a string literal")),
            },
            ("syscall_nr", _) => Err(err(e, "syscall_nr('name') needs a string literal")),
            ("enum_value", [FunctionArgExpr::Expr(Expr::Value(t)), FunctionArgExpr::Expr(arg @ Expr::Value(v))]) => {
                match (&t.value, &v.value) {
                    (Value::SingleQuotedString(ty), Value::SingleQuotedString(n)) => self.enum_value(ty, n, arg),
                    _ => Err(err(e, "enum_value('enum', 'ENUMERATOR') needs two string literals")),
                }
            }
            ("enum_value", _) => Err(err(e, "enum_value('enum', 'ENUMERATOR') needs two string literals")),
            // io_uring_op('READ') = enum_value('io_uring_op', 'IORING_OP_READ').
            ("io_uring_op", [FunctionArgExpr::Expr(arg @ Expr::Value(v))]) => match &v.value {
                Value::SingleQuotedString(n) => self.enum_value("io_uring_op", &format!("IORING_OP_{n}"), arg),
                _ => Err(err(e, "io_uring_op('NAME') needs a string literal (READ, WRITE_FIXED, …)")),
            },
            ("io_uring_op", _) => Err(err(e, "io_uring_op('NAME') needs a string literal (READ, WRITE_FIXED, …)")),
            ("print_flag", args) => self.print_flag(e, args),
            ("str", args) => self.user_string(e, args),
            (super::at_exit::NAME, args) => self.string_at_exit(e, args),
            ("user_strlen", args) => {
                Ok(ScalarExpr::UserStrlen(Box::new(self.user_address(e, "user_strlen", "ptr", args)?)))
            }
            ("env_int", args) => env_int(e, args),
            (name, args) if name.starts_with("user_") && user_int_type(name).is_some() => {
                let ty = user_int_type(name).expect("checked");
                Ok(ScalarExpr::UserRead { addr: Box::new(self.user_address(e, name, "addr", args)?), ty })
            }
            _ => Err(unknown_function(f)),
        }
    }

    /// The one argument of `user_u64(addr)` … and `user_strlen(ptr)`: an
    /// integer, the address in the traced process the read is made at.
    fn user_address(&self, e: &Expr, name: &str, param: &str, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
        let [FunctionArgExpr::Expr(a)] = args else {
            return Err(err(e, format!("{name}({param}) takes one address")));
        };
        let addr = self.scalar(a)?;
        if !addr.ty().is_int() {
            return Err(err(a, format!("{name}() reads at an integer address; `{a}` is {}", addr.ty())));
        }
        Ok(addr)
    }

    /// `print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO_RW')`: the value
    /// the event's tracefs `print fmt:` gives that name in its flag or symbol
    /// table for the field (`catalog::print_fmt`), a constant at bind time, for
    /// the kernel's `#define`s that BTF does not carry.
    fn print_flag(&self, e: &Expr, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
        let usage = "print_flag('category.event', 'field', 'NAME') needs three string literals";
        let lit = |a: &&FunctionArgExpr| match *a {
            FunctionArgExpr::Expr(x @ Expr::Value(v)) => match &v.value {
                Value::SingleQuotedString(s) => Some((s.clone(), x.clone())),
                _ => None,
            },
            _ => None,
        };
        let [Some((event, at_event)), Some((field, _)), Some((name, at_name))] =
            [0, 1, 2].map(|i| args.get(i).and_then(lit))
        else {
            return Err(err(e, usage));
        };
        if args.len() != 3 {
            return Err(err(e, usage));
        }
        let Some((category, event_name)) = event.split_once('.').or_else(|| event.split_once(':')) else {
            return Err(err(&at_event, format!("`{event}`: name the event as category.event")));
        };
        let text = match self.kernel.tracepoint_format(category, event_name) {
            Ok(Some(f)) => f.text,
            Ok(None) => return Err(err(&at_event, format!("`{event}` is not a tracepoint of this kernel"))),
            Err(why) => return Err(err(&at_event, format!("`{event}`: {why}"))),
        };
        match crate::catalog::print_fmt::flag_value(&text, &field, &name) {
            Ok(v) => Ok(ScalarExpr::Int { value: v, ty: DataType::U64 }),
            Err(why) => Err(err(&at_name, format!("{event}: {why}"))),
        }
    }

    /// `errno_name(ret) = 'ENOENT'`: `ret = -2`, compared in the kernel.
    fn linux_name_match(
        &self,
        e: &Expr,
        which: super::LinuxName,
        arg: &Expr,
        (name, lit): (&str, &Expr),
        op: BinaryOp,
    ) -> Result<ScalarExpr> {
        let Some(value) = which.value(name) else {
            let mut q = QueryError::new(
                Stage::Bind,
                format!("`{name}` is not a name {}() gives", which.function()),
                span_of(lit),
            );
            let close = crate::catalog::suggest_column(&name.to_ascii_uppercase(), &which.names());
            if let Some(first) = close.first() {
                q = q
                    .with_help(format!(
                        "did you mean {}?",
                        close.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ")
                    ))
                    .with_fix(format!("'{first}'"));
            }
            return Err(Error::Query(q));
        };
        let number = self.scalar(arg)?;
        if !number.ty().is_int() {
            return Err(err(
                arg,
                format!("{} needs {}; `{arg}` is {}", which.function(), which.argument(), number.ty()),
            ));
        }
        let ty = if value < 0 { DataType::I64 } else { DataType::U64 };
        let value = ScalarExpr::Int { value: value as u64, ty };
        self.compare(e, op, number, value)
    }

    /// `enum_value('io_uring_op', 'IORING_OP_READ')`: the enumerator's value in
    /// the running kernel's BTF, a constant at bind time (as `syscall_nr` is from
    /// the system call table), so a query names opcodes instead of numbers that
    /// move between kernels.
    fn enum_value(&self, enum_name: &str, name: &str, at: &Expr) -> Result<ScalarExpr> {
        let Some(btf) = self.kernel.btf() else {
            return Err(err(at, "enum_value() reads the kernel's BTF, which this machine does not have"));
        };
        if let Some(v) = btf.enumerator(enum_name, name) {
            let ty = if v < 0 { DataType::I64 } else { DataType::U64 };
            return Ok(ScalarExpr::Int { value: v as u64, ty });
        }
        let enumeration = btf.find_all(enum_name).find_map(|id| match btf.kind(id) {
            crate::btf::Kind::Enum(e) => Some(e),
            _ => None,
        });
        let Some(e) = enumeration else {
            return Err(err(at, format!("`enum {enum_name}` is not in this kernel's BTF")));
        };
        let names: Vec<&str> = btf.enum_values(e).iter().map(|v| btf.name(v)).collect();
        let shown = names.iter().take(12).copied().collect::<Vec<_>>().join(", ");
        let more = if names.len() > 12 { format!(", … ({} in all)", names.len()) } else { String::new() };
        Err(err(at, format!("`{name}` is not an enumerator of `enum {enum_name}` on this kernel: {shown}{more}")))
    }

    /// `alias.column`, or a dotted path that starts at a raw argument.
    pub(super) fn path_or_column(&self, parts: &[Ident], e: &Expr) -> Result<ScalarExpr> {
        if let Some(path) = self.arg_path(parts) {
            return path;
        }
        let names: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
        self.column(&names, e)
    }

    fn column(&self, parts: &[&str], e: &Expr) -> Result<ScalarExpr> {
        let (name, side) = match parts {
            [name] => (*name, None),
            [q, name] => match self.side_named(q) {
                Some(side) => (*name, Some(side)),
                None => return Err(err(e, format!("unknown event alias `{q}`"))),
            },
            _ => return Err(err(e, format!("`{e}` is not a column"))),
        };
        let found = match side {
            Some(side) => self.side_lookup(side, name),
            None => self.lookup(name),
        };
        if let Some(c) = found {
            let read = side.or_else(|| self.sides.iter().find(|s| self.side_lookup(s, name).is_some()));
            if let Some(read) = read {
                self.note_read(read, &c, span_of(e));
            }
            return Ok(c);
        }
        if !self.union.is_empty() {
            let names: Vec<&str> = self.union.iter().map(|(n, _)| n.as_str()).collect();
            let message = format!(
                "`{name}` is not a column of the union: its branches yield {}, and every event has the system columns (pid, comm, time, …)",
                names.join(", ")
            );
            return Err(err(e, message));
        }
        let sides: Vec<_> = side.map_or_else(|| self.sides.iter().collect(), |s| vec![s]);
        let formats: Vec<_> = sides.iter().map(|s| (s.format(), s.event.name.to_string())).collect();
        if let Some(error) = super::file::file_column_error(self.kernel, name, e, &formats) {
            return Err(error);
        }
        let unreadable = sides
            .iter()
            .find_map(|s| s.format().field(name).and_then(|_| super::field_column(s.format(), name, None).err()));
        let message = match unreadable {
            Some(m) => m,
            _ if side.is_none() && self.sides.iter().filter(|s| self.side_lookup(s, name).is_some()).count() > 1 => {
                // The column exists; the message says how to name it, and other columns are no help.
                let names: Vec<String> = self.sides.iter().map(|s| format!("{}.{name}", s.display_name())).collect();
                let message = format!("`{name}` is a column of both joined events; write {}", names.join(" or "));
                return Err(err(e, message));
            }
            _ => match sides.iter().find_map(|s| crate::catalog::probe::unavailable_column(&s.event.name, name)) {
                Some(why) => return Err(err(e, why)), // arg0 at a return probe, retval at an entry
                None if matches!(e, Expr::Identifier(id) if id.quote_style == Some('"')) => {
                    return Err(double_quoted_string(e, name))
                }
                None if super::cgroup_columns::NAMES.contains(&name) => {
                    return Err(err(
                        e,
                        format!(
                            "`{name}` is named in user space, per group: the kernel cannot filter or compute on it; \
                             select and group by it, or scope the query with --cgroup PATH"
                        ),
                    ))
                }
                None => format!("unknown column `{name}` in {}", self.events_text()),
            },
        };
        let mut q = QueryError::new(Stage::Bind, message, span_of(e));
        let names = self.column_names();
        let close = suggest_column(name, &names.iter().map(String::as_str).collect::<Vec<_>>());
        if let Some(first) = close.first() {
            q = q
                .with_help(format!(
                    "did you mean {}?",
                    close.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                ))
                .with_fix(first.to_string());
        } else {
            q = q.with_help(format!("`ebq describe {}` lists the columns", self.sides[0].event.name));
        }
        Err(Error::Query(q))
    }

    fn binary(&self, e: &Expr, left: &Expr, op: &BinaryOperator, right: &Expr) -> Result<ScalarExpr> {
        let Some(op) = binary_op(op) else {
            return Err(err(e, format!("operator `{op}` is not supported")));
        };
        // String comparisons: column = 'literal' in either order.
        if matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
            for (col, lit) in [(left, right), (right, left)] {
                if let Expr::Value(v) = lit {
                    if let Value::SingleQuotedString(s) = &v.value {
                        if let Some((which, arg)) = super::linux_names::named_arg(col) {
                            return self.linux_name_match(e, which, arg, (s, lit), op);
                        }
                        return self.string_match(col, s, StrPattern::Exact, op == BinaryOp::Ne);
                    }
                }
            }
        }
        let l = self.scalar(left)?;
        let r = self.scalar(right)?;
        refuse_stack(left, &l)?;
        refuse_stack(right, &r)?;
        match op {
            BinaryOp::And | BinaryOp::Or => {
                for (side, s) in [(left, &l), (right, &r)] {
                    if s.ty() != DataType::Bool {
                        return Err(err(
                            side,
                            format!(
                                "{} needs conditions on both sides; `{side}` is {}",
                                if op == BinaryOp::And { "AND" } else { "OR" },
                                s.ty()
                            ),
                        ));
                    }
                }
                Ok(ScalarExpr::Binary {
                    op,
                    left: Box::new(l),
                    right: Box::new(r),
                    ty: DataType::Bool,
                    operand_ty: DataType::Bool,
                })
            }
            _ if op.is_comparison() => self.compare(e, op, l, r),
            _ => {
                for (side, s) in [(left, &l), (right, &r)] {
                    if !s.ty().is_int() {
                        return Err(err(side, format!("`{}` needs integers; `{side}` is {}", op.c_op(), s.ty())));
                    }
                }
                let ty = arithmetic_type(&l, &r);
                Ok(ScalarExpr::Binary { op, left: Box::new(l), right: Box::new(r), ty, operand_ty: ty })
            }
        }
    }

    fn compare(&self, e: &Expr, op: BinaryOp, l: ScalarExpr, r: ScalarExpr) -> Result<ScalarExpr> {
        refuse_stack(e, &l)?;
        refuse_stack(e, &r)?;
        let (lt, rt) = (l.ty(), r.ty());
        let ints = lt.is_int() && rt.is_int();
        let bools = lt == DataType::Bool && rt == DataType::Bool && matches!(op, BinaryOp::Eq | BinaryOp::Ne);
        if matches!((lt, rt), (DataType::Str { .. }, DataType::Str { .. })) {
            return Err(err(
                e,
                "two string columns cannot be compared; compare a string column with a literal (comm = 'dd')",
            ));
        }
        if !(ints || bools) {
            return Err(err(e, format!("cannot compare {lt} with {rt}")));
        }
        let operand_ty = if lt == DataType::Bool { DataType::Bool } else { arithmetic_type(&l, &r) };
        Ok(ScalarExpr::Binary { op, left: Box::new(l), right: Box::new(r), ty: DataType::Bool, operand_ty })
    }

    fn string_match(&self, col: &Expr, lit: &str, pattern: StrPattern, negated: bool) -> Result<ScalarExpr> {
        let c = self.scalar(col)?;
        refuse_stack(col, &c)?;
        // A constant (or a CASE of constants) is decided now, or by its CASE's conditions.
        if let Some(decided) = c.str_match_const(lit, pattern, negated) {
            return Ok(decided);
        }
        let ScalarExpr::Column { source, ty: DataType::Str { cap } } = c else {
            return Err(err(
                col,
                format!("`{col}` is {}, not a string column; only string columns compare with string literals", c.ty()),
            ));
        };
        if lit.len() >= usize::from(cap) {
            return Err(err(
                col,
                format!(
                    "`{col}` holds at most {} bytes, so it can never {} the {}-byte string '{}'",
                    cap - 1,
                    match pattern {
                        StrPattern::Exact => "equal",
                        StrPattern::Prefix => "start with",
                        StrPattern::Suffix => "end with",
                        StrPattern::Contains => "contain",
                    },
                    lit.len(),
                    shortened(lit)
                ),
            ));
        }
        if lit.contains('\0') {
            return Err(err(col, "string literals cannot contain NUL bytes"));
        }
        // Every string starts with, ends with and contains the empty string.
        if lit.is_empty() && pattern != StrPattern::Exact {
            return Ok(ScalarExpr::Bool(!negated));
        }
        Ok(ScalarExpr::StrMatch { column: source, cap, value: lit.to_string(), pattern, negated })
    }
}

/// A LIKE pattern as its literal and where the literal stands: `'abc'`,
/// `'abc%'`, `'%abc'` or `'%abc%'`. Any other `%` and every `_` are refused:
/// the message, its help and the wildcard's index (in characters) in `p`.
fn like_pattern(p: &str) -> std::result::Result<(&str, StrPattern), (String, String, usize)> {
    let (rest, lead) = match p.strip_prefix('%') {
        Some(rest) => (rest, true),
        None => (p, false),
    };
    let (lit, trail) = match rest.strip_suffix('%') {
        Some(lit) => (lit, true),
        None => (rest, false),
    };
    let pattern = match (lead, trail) {
        (false, false) => StrPattern::Exact,
        (false, true) => StrPattern::Prefix,
        (true, false) => StrPattern::Suffix,
        (true, true) => StrPattern::Contains,
    };
    let supported = "LIKE patterns are 'abc' (equal), 'abc%' (starts with), '%abc' (ends with) and '%abc%' (contains)";
    let at = |i: usize| p[..usize::from(lead) + i].chars().count();
    if let Some(i) = lit.find('_') {
        return Err((
            format!("`_` (any one character, at character {} of '{p}') is not supported in LIKE", at(i) + 1),
            format!("{supported}; `_` cannot be matched in the kernel yet"),
            at(i),
        ));
    }
    if let Some(i) = lit.find('%') {
        return Err((
            format!("`%` is supported only at a LIKE pattern's start and end, not at character {} of '{p}'", at(i) + 1),
            format!("{supported}; for 'a%b' write `s LIKE 'a%' AND s LIKE '%b'` (which also matches 'ab')"),
            at(i),
        ));
    }
    Ok((lit, pattern))
}

/// The span of the `at`-th character of the pattern `p` whose literal spans
/// `s` (`'p'` on one line, no `''` inside), else `s` itself.
fn wildcard_span(s: Span, p: &str, at: usize) -> Span {
    let width = p.chars().count() + 2;
    if s.start.line != s.end.line || (s.end.column - s.start.column) as usize != width {
        return s;
    }
    let column = s.start.column + 1 + at as u32;
    Span {
        start: crate::error::Location { line: s.start.line, column },
        end: crate::error::Location { line: s.start.line, column: column + 1 },
    }
}

/// The ebq operator for a sqlparser one.
/// Stacks (`kstack`, `ustack`) are ids in the kernel and text only in user
/// space: comparing or computing with them would compare ids, not frames.
fn refuse_stack(at: &Expr, s: &ScalarExpr) -> Result<()> {
    match s.ty() {
        DataType::Stack { .. } => Err(err(
            at,
            format!(
                "{}s can be selected and grouped by, not compared or computed with (their frames are text only in user space): `{at}`",
                s.ty()
            ),
        )),
        _ => Ok(()),
    }
}

pub(super) fn binary_op(op: &BinaryOperator) -> Option<BinaryOp> {
    Some(match op {
        BinaryOperator::Plus => BinaryOp::Add,
        BinaryOperator::Minus => BinaryOp::Sub,
        BinaryOperator::Multiply => BinaryOp::Mul,
        BinaryOperator::Divide => BinaryOp::Div,
        BinaryOperator::Modulo => BinaryOp::Mod,
        BinaryOperator::BitwiseAnd => BinaryOp::BitAnd,
        BinaryOperator::BitwiseOr => BinaryOp::BitOr,
        BinaryOperator::BitwiseXor => BinaryOp::BitXor,
        BinaryOperator::PGBitwiseShiftLeft => BinaryOp::Shl,
        BinaryOperator::PGBitwiseShiftRight => BinaryOp::Shr,
        BinaryOperator::Eq => BinaryOp::Eq,
        BinaryOperator::NotEq => BinaryOp::Ne,
        BinaryOperator::Lt => BinaryOp::Lt,
        BinaryOperator::LtEq => BinaryOp::Le,
        BinaryOperator::Gt => BinaryOp::Gt,
        BinaryOperator::GtEq => BinaryOp::Ge,
        BinaryOperator::And => BinaryOp::And,
        BinaryOperator::Or => BinaryOp::Or,
        _ => return None,
    })
}

/// Arithmetic and comparisons run in 64 bits: signed if either side is signed.
pub(super) fn arithmetic_type(l: &ScalarExpr, r: &ScalarExpr) -> DataType {
    if l.ty().is_signed() || r.ty().is_signed() {
        DataType::I64
    } else {
        DataType::U64
    }
}

/// Longest string literal quoted whole in an error message.
const MAX_QUOTED: usize = 80;

/// `lit`, or its first [`MAX_QUOTED`] characters and `…` (a 900 kB literal
/// does not belong in a one-line message).
fn shortened(lit: &str) -> String {
    match lit.char_indices().nth(MAX_QUOTED) {
        Some((end, _)) => format!("{}…", &lit[..end]),
        None => lit.to_string(),
    }
}

/// `comm == "dd"`: in SQL double quotes name a column, so `"dd"` is read as
/// one; a bpftrace or C user meant the string, which takes single quotes.
fn double_quoted_string(e: &Expr, text: &str) -> Error {
    let string = format!("'{}'", text.replace('\'', "''"));
    Error::Query(
        QueryError::new(
            Stage::Bind,
            format!("unknown column `{text}`: double quotes name a column; a string takes single quotes"),
            span_of(e),
        )
        .with_help(format!("write {string}"))
        .with_fix(string),
    )
}

/// The integer type a CAST names: SQL's names (`BIGINT`, `INT UNSIGNED`, …,
/// DuckDB's `UBIGINT`) or ebq's own (`i64`, `u32`, as `describe` prints them).
/// The integer type `user_u64` (`user_i8` … `user_u64`) reads.
fn user_int_type(name: &str) -> Option<DataType> {
    let t = name.strip_prefix("user_")?;
    let bits = t.strip_prefix(['i', 'u'])?.parse::<u8>().ok().filter(|b| matches!(b, 8 | 16 | 32 | 64))?;
    Some(DataType::Int { bits, signed: t.starts_with('i') })
}

fn cast_type(name: &str) -> Option<DataType> {
    let name = name.to_ascii_lowercase();
    let (base, unsigned) = match name.strip_suffix(" unsigned") {
        Some(b) => (b, true),
        None => (name.as_str(), false),
    };
    let int = |bits: u8, signed: bool| Some(DataType::Int { bits, signed });
    match base {
        "bigint" | "int8" | "int64" => int(64, !unsigned),
        "int" | "integer" | "int4" | "int32" => int(32, !unsigned),
        "smallint" | "int2" | "int16" => int(16, !unsigned),
        "tinyint" => int(8, !unsigned),
        "ubigint" if !unsigned => int(64, false),
        "uinteger" if !unsigned => int(32, false),
        "usmallint" if !unsigned => int(16, false),
        "utinyint" if !unsigned => int(8, false),
        _ if !unsigned => {
            let signed = base.starts_with('i');
            match base.strip_prefix(['i', 'u']).and_then(|b| b.parse::<u8>().ok()) {
                Some(bits @ (8 | 16 | 32 | 64)) => int(bits, signed),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Longest string constant (bytes, without the NUL).
const MAX_STRING_CONSTANT: usize = 255;

/// A string literal as a value (`'io_uring' AS path`).
fn string_constant(e: &Expr, s: &str) -> Result<ScalarExpr> {
    if s.contains('\0') {
        return Err(err(e, "string literals cannot contain NUL bytes"));
    }
    if s.len() > MAX_STRING_CONSTANT {
        return Err(err(
            e,
            format!("a string constant holds at most {MAX_STRING_CONSTANT} bytes; this one has {}", s.len()),
        ));
    }
    Ok(ScalarExpr::Str { value: s.to_string(), cap: s.len() as u16 + 1 })
}

/// A searched CASE whose values are strings: every value (and ELSE) a string
/// constant, all in a buffer as long as the longest.
fn string_case(
    e: &Expr,
    branches: Vec<(ScalarExpr, ScalarExpr, &Expr)>,
    otherwise: ScalarExpr,
    else_result: Option<&Expr>,
) -> Result<ScalarExpr> {
    for (_, v, x) in &branches {
        if !v.is_const_str() {
            return Err(err(*x, format!("CASE values are all integers or all strings; `{x}` is {}", v.ty())));
        }
    }
    if !otherwise.is_const_str() {
        let at = else_result.unwrap_or(e);
        return Err(err(at, format!("CASE values are all integers or all strings; ELSE is {}", otherwise.ty())));
    }
    let cap = branches.iter().map(|(_, v, _)| v.ty()).chain([otherwise.ty()]).fold(1, |m, t| match t {
        DataType::Str { cap } => m.max(cap),
        _ => m,
    });
    Ok(branches.into_iter().rev().fold(otherwise.with_str_cap(cap), |acc, (cond, then, _)| ScalarExpr::Cond {
        cond: Box::new(cond),
        then: Box::new(then.with_str_cap(cap)),
        otherwise: Box::new(acc),
        ty: DataType::Str { cap },
    }))
}

/// `env_int('PMI_RANK', 'OMPI_COMM_WORLD_RANK')`: names as string literals,
/// each a variable's name (letters, digits, `_`) short enough that
/// `NAME=` and a number fit one read of [`super::ENV_INT_CHUNK`] bytes.
fn env_int(e: &Expr, args: &[&FunctionArgExpr]) -> Result<ScalarExpr> {
    let usage = "env_int('NAME'[, 'NAME2', …]) needs environment variables' names as string literals";
    let mut names = vec![];
    for a in args {
        let FunctionArgExpr::Expr(x) = *a else { return Err(err(e, usage)) };
        let Expr::Value(v) = x else { return Err(err(x, usage)) };
        let Value::SingleQuotedString(name) = &v.value else { return Err(err(x, usage)) };
        // `NAME=`, a 20-digit number and the NUL within one read: 105 bytes.
        let longest = super::ENV_INT_CHUNK as usize - 23;
        if name.is_empty() || name.len() > longest || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(err(
                x,
                format!(
                    "`{name}` is no environment variable's name env_int() reads (letters, digits and _, at most {longest} bytes)"
                ),
            ));
        }
        names.push(name.clone());
    }
    if names.is_empty() {
        return Err(err(e, usage));
    }
    Ok(ScalarExpr::EnvInt(names))
}
