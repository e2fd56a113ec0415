//! Binding histogram and quantile aggregates: `HIST(x)`, `LHIST(x, min, max,
//! step)`, `QUANTILE(x, q)` and `P50/P90/P99/P999(x)`.
//!
//! Parameters are literals checked here, with positions, so every call that
//! binds has a bounded number of buckets the planner can lay out.

use super::expr::{contains_aggregate, err};
use super::{AggCall, AggFunc, Binder};
use crate::error::Result;
use crate::hist::{Linear, LHIST_MAX_BUCKETS};
use crate::parse::Expr;
use sqlparser::ast::{DuplicateTreatment, Function, FunctionArgExpr, FunctionArguments, UnaryOperator, Value};

/// True for the upper-cased names bound here.
pub(super) fn is_histogram_name(name: &str) -> bool {
    matches!(name, "HIST" | "LHIST" | "QUANTILE" | "P50" | "P90" | "P99" | "P999")
}

impl Binder<'_> {
    /// Binds a call whose name [`is_histogram_name`].
    pub(super) fn histogram_call(&self, e: &Expr, f: &Function, args: &[&FunctionArgExpr]) -> Result<AggCall> {
        let name = f.name.to_string().to_ascii_uppercase();
        if let FunctionArguments::List(list) = &f.args {
            if matches!(list.duplicate_treatment, Some(DuplicateTreatment::Distinct)) {
                return Err(err(e, format!("{name}(DISTINCT …) is not supported")));
            }
        }
        let usage = match name.as_str() {
            "HIST" => "HIST(expr)",
            "LHIST" => "LHIST(expr, min, max, step)",
            "QUANTILE" => "QUANTILE(expr, q) with 0 < q <= 1",
            _ => "P50(expr), P90(expr), P99(expr) or P999(expr)",
        };
        let want = match name.as_str() {
            "LHIST" => 4,
            "QUANTILE" => 2,
            _ => 1,
        };
        let exprs: Vec<&Expr> = args
            .iter()
            .filter_map(|a| match a {
                FunctionArgExpr::Expr(x) => Some(x),
                _ => None,
            })
            .collect();
        if args.len() != want || exprs.len() != want {
            return Err(err(e, format!("{name} takes {want} argument{}: {usage}", if want == 1 { "" } else { "s" })));
        }
        let x = exprs[0];
        if contains_aggregate(x) {
            return Err(err(x, "aggregates cannot be nested"));
        }
        let arg = self.scalar(x)?;
        if !arg.ty().is_int() {
            return Err(err(x, format!("{name} needs an integer argument; `{x}` is {}", arg.ty())));
        }
        let func = match name.as_str() {
            "HIST" => AggFunc::Hist(crate::hist::Log2::Floor),
            "LHIST" => {
                let min = int_literal(exprs[1], "LHIST's min")?;
                let max = int_literal(exprs[2], "LHIST's max")?;
                let step = int_literal(exprs[3], "LHIST's step")?;
                if step <= 0 {
                    return Err(err(exprs[3], format!("LHIST's step must be positive; got {step}")));
                }
                if max <= min {
                    return Err(err(exprs[2], format!("LHIST's max ({max}) must be greater than its min ({min})")));
                }
                if min < 0 && !arg.ty().is_signed() {
                    return Err(err(
                        exprs[1],
                        format!("`{x}` is unsigned ({}), so LHIST's min must be at least 0; got {min}", arg.ty()),
                    ));
                }
                let linear = Linear { min, max, step: step as u64 };
                if linear.buckets() > LHIST_MAX_BUCKETS {
                    return Err(err(
                        exprs[3],
                        format!(
                            "LHIST({x}, {min}, {max}, {step}) has {} buckets; the limit is {LHIST_MAX_BUCKETS} (use a larger step)",
                            linear.buckets()
                        ),
                    ));
                }
                AggFunc::Lhist(linear)
            }
            "QUANTILE" => AggFunc::Quantile { ppm: quantile_literal(exprs[1])? },
            "P50" => AggFunc::Quantile { ppm: 500_000 },
            "P90" => AggFunc::Quantile { ppm: 900_000 },
            "P99" => AggFunc::Quantile { ppm: 990_000 },
            _ => AggFunc::Quantile { ppm: 999_000 },
        };
        Ok(AggCall { func, arg: Some(arg), weight: None })
    }
}

/// An integer literal, possibly negative, that fits i64.
pub(super) fn int_literal(e: &Expr, what: &str) -> Result<i64> {
    let (negative, inner) = match e {
        Expr::UnaryOp { op: UnaryOperator::Minus, expr } => (true, expr.as_ref()),
        other => (false, other),
    };
    let text = match inner {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.clone(),
            _ => return Err(err(e, format!("{what} must be an integer literal; got `{e}`"))),
        },
        _ => return Err(err(e, format!("{what} must be an integer literal; got `{e}`"))),
    };
    let magnitude: i128 = text.parse().map_err(|_| err(e, format!("{what} must be an integer literal; got `{e}`")))?;
    let v = if negative { -magnitude } else { magnitude };
    i64::try_from(v).map_err(|_| err(e, format!("{what} ({v}) does not fit a 64-bit signed integer")))
}

/// q of QUANTILE: a literal in (0, 1], kept to six decimals.
fn quantile_literal(e: &Expr) -> Result<u32> {
    let bad = || err(e, format!("QUANTILE's q must be a number with 0 < q <= 1, e.g. 0.99; got `{e}`"));
    let Expr::Value(v) = e else { return Err(bad()) };
    let Value::Number(n, _) = &v.value else { return Err(bad()) };
    let q: f64 = n.parse().map_err(|_| bad())?;
    if !(q > 0.0 && q <= 1.0) {
        return Err(bad());
    }
    let ppm = (q * 1e6).round() as u32;
    if ppm == 0 {
        return Err(err(e, format!("QUANTILE's q ({n}) is below the resolution of 0.000001")));
    }
    Ok(ppm)
}
