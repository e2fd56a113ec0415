//! User-space operators: HAVING, output expressions, ORDER BY, LIMIT — what
//! the kernel cannot do, applied to each window's groups (or to rows).

use super::decode::Value;
use ebq_front::bind::{BinaryOp, Input, PostExpr};
use ebq_front::plan::{UserPlan, UserSource};
use std::cmp::Ordering;

/// Evaluates `e` over one group's inputs and (for ORDER BY) its outputs.
pub fn eval(e: &PostExpr, inputs: &[Value], outputs: &[Value]) -> Value {
    match e {
        PostExpr::Ref(Input { index, .. }) => inputs[*index].clone(),
        PostExpr::Output { index, .. } => outputs[*index].clone(),
        PostExpr::Int { value, ty } if ty.is_signed() => Value::I(*value as i64),
        PostExpr::Int { value, .. } => Value::U(*value),
        PostExpr::Float(v) => Value::F(*v),
        PostExpr::Not(x) => match eval(x, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::B(!truthy(&v)),
        },
        PostExpr::Neg(x) => match eval(x, inputs, outputs) {
            Value::Null => Value::Null,
            Value::F(f) => Value::F(-f),
            v => Value::I(as_i64(&v).wrapping_neg()),
        },
        PostExpr::SyscallName { nr, names } => match eval(nr, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::S(names.name(as_i64(&v))),
        },
        PostExpr::Cgroup(what, x) => match eval(x, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::S(what.of(as_i64(&v) as u64)),
        },
        PostExpr::ReqFlags { flags, names } => match eval(flags, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::S(names.name(as_i64(&v) as u64)),
        },
        PostExpr::DevStr(x) => match eval(x, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::S(dev_str(as_i64(&v) as u64)),
        },
        PostExpr::LinuxName(which, x) => match eval(x, inputs, outputs) {
            Value::Null => Value::Null,
            v => Value::S(which.name(as_i64(&v))),
        },
        PostExpr::PartName { disk, partno } => match (eval(disk, inputs, outputs), eval(partno, inputs, outputs)) {
            (Value::S(disk), n) if n != Value::Null => Value::S(part_name(&disk, as_i64(&n) as u64)),
            _ => Value::Null,
        },
        PostExpr::Binary { op, left, right, ty } => {
            let l = eval(left, inputs, outputs);
            if *op == BinaryOp::And && !truthy(&l) {
                return Value::B(false);
            }
            if *op == BinaryOp::Or && truthy(&l) {
                return Value::B(true);
            }
            let r = eval(right, inputs, outputs);
            // SQL's three-valued logic: NULL AND false is false, NULL OR true is true,
            // anything else with a NULL is NULL.
            match (op, &l, &r) {
                (BinaryOp::And, _, Value::B(false)) => Value::B(false),
                (BinaryOp::Or, _, Value::B(true)) => Value::B(true),
                (_, Value::Null, _) | (_, _, Value::Null) => Value::Null,
                _ => binary(*op, l, r, ty.is_signed()),
            }
        }
    }
}

fn truthy(v: &Value) -> bool {
    matches!(v, Value::B(true))
}

fn as_i64(v: &Value) -> i64 {
    match v {
        Value::U(u) => *u as i64,
        Value::I(i) => *i,
        Value::F(f) => *f as i64,
        _ => 0,
    }
}

fn as_f64(v: &Value) -> f64 {
    match v {
        Value::U(u) => *u as f64,
        Value::I(i) => *i as f64,
        Value::F(f) => *f,
        _ => 0.0,
    }
}

/// Same rules as the kernel: 64-bit wrapping, x / 0 = 0, x % 0 = x; floats when either side is one.
fn binary(op: BinaryOp, l: Value, r: Value, signed: bool) -> Value {
    use BinaryOp::*;
    if op.is_comparison() {
        let ord = match (&l, &r) {
            (Value::S(a), Value::S(b)) => a.cmp(b),
            (Value::F(_), _) | (_, Value::F(_)) => as_f64(&l).total_cmp(&as_f64(&r)),
            (Value::U(a), Value::U(b)) => a.cmp(b),
            _ => as_i64(&l).cmp(&as_i64(&r)),
        };
        return Value::B(match op {
            Eq => ord == Ordering::Equal,
            Ne => ord != Ordering::Equal,
            Lt => ord == Ordering::Less,
            Le => ord != Ordering::Greater,
            Gt => ord == Ordering::Greater,
            _ => ord != Ordering::Less,
        });
    }
    if matches!(op, And | Or) {
        return Value::B(truthy(&r));
    }
    if matches!(l, Value::F(_)) || matches!(r, Value::F(_)) {
        let (a, b) = (as_f64(&l), as_f64(&r));
        return Value::F(match op {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div if b == 0.0 => 0.0,
            Div => a / b,
            Mod if b == 0.0 => a,
            _ => a % b,
        });
    }
    let (a, b) = (as_i64(&l) as u64, as_i64(&r) as u64);
    let bits = if signed {
        let (a, b) = (a as i64, b as i64);
        (match op {
            Add => a.wrapping_add(b),
            Sub => a.wrapping_sub(b),
            Mul => a.wrapping_mul(b),
            Div if b == 0 => 0,
            Div => a.wrapping_div(b),
            Mod if b == 0 => a,
            Mod => a.wrapping_rem(b),
            BitAnd => a & b,
            BitOr => a | b,
            BitXor => a ^ b,
            Shl if (b as u64) < 64 => a << b,
            Shr => a >> (b as u64).min(63),
            _ => 0,
        }) as u64
    } else {
        match op {
            Add => a.wrapping_add(b),
            Sub => a.wrapping_sub(b),
            Mul => a.wrapping_mul(b),
            Div if b == 0 => 0,
            Div => a / b,
            Mod if b == 0 => a,
            Mod => a % b,
            BitAnd => a & b,
            BitOr => a | b,
            BitXor => a ^ b,
            Shl if b < 64 => a << b,
            Shr if b < 64 => a >> b,
            _ => 0,
        }
    };
    if signed {
        Value::I(bits as i64)
    } else {
        Value::U(bits)
    }
}

/// ORDER BY's comparison of two rows' sort keys.
fn cmp_keys(user: &UserPlan, a: &[Value], b: &[Value]) -> Ordering {
    a.iter()
        .zip(b)
        .zip(&user.order_by)
        .map(|((x, y), k)| if k.desc { y.cmp_for_sort(x) } else { x.cmp_for_sort(y) })
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// The `n` input rows that [`apply`] would put first (HAVING applied, stable
/// ORDER BY), as inputs: ORDER BY … LIMIT n keeps only these between polls, and
/// `apply` over them later gives the same result as over every row.
pub fn top_inputs(user: &UserPlan, input_rows: Vec<Vec<Value>>, n: usize) -> Vec<Vec<Value>> {
    let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = input_rows
        .into_iter()
        .filter(|inputs| user.having.as_ref().is_none_or(|h| truthy(&eval(h, inputs, &[]))))
        .map(|inputs| {
            let outputs: Vec<Value> = user.columns.iter().map(|c| eval(&c.expr, &inputs, &[])).collect();
            (user.order_by.iter().map(|k| eval(&k.expr, &inputs, &outputs)).collect(), inputs)
        })
        .collect();
    keyed.sort_by(|(a, _), (b, _)| cmp_keys(user, a, b));
    keyed.into_iter().take(n).map(|(_, inputs)| inputs).collect()
}

/// Applies HAVING, computes the output columns, sorts and limits. Input
/// values past the plan's inputs (a group's distributions) follow the
/// output columns in each returned row.
///
/// Without ORDER BY, groups are sorted by their keys so output is stable
/// from run to run; rows keep their arrival order.
pub fn apply(user: &UserPlan, input_rows: Vec<Vec<Value>>, sort_by_keys: bool) -> Vec<Vec<Value>> {
    let input_rows = match empty_aggregate(user) {
        Some(row) if input_rows.is_empty() => vec![row],
        _ => input_rows,
    };
    let mut rows: Vec<(Vec<Value>, Vec<Value>)> = input_rows
        .into_iter()
        .filter(|inputs| user.having.as_ref().is_none_or(|h| truthy(&eval(h, inputs, &[]))))
        .map(|inputs| {
            // Inputs past the plan's own are the row's distributions: carried after the outputs.
            let extras = inputs.get(user.inputs.len()..).unwrap_or_default().iter().cloned();
            let outputs = user.columns.iter().map(|c| eval(&c.expr, &inputs, &[])).chain(extras).collect();
            (inputs, outputs)
        })
        .collect();
    if !user.order_by.is_empty() {
        let mut keyed: Vec<(Vec<Value>, Vec<Value>)> = rows
            .into_iter()
            .map(|(inputs, outputs)| {
                let keys = user.order_by.iter().map(|k| eval(&k.expr, &inputs, &outputs)).collect();
                (keys, outputs)
            })
            .collect();
        keyed.sort_by(|(a, _), (b, _)| cmp_keys(user, a, b));
        rows = keyed.into_iter().map(|(_, o)| (vec![], o)).collect();
    } else if sort_by_keys {
        let keys: Vec<usize> =
            user.inputs.iter().enumerate().filter(|(_, s)| matches!(s, UserSource::Key(_))).map(|(i, _)| i).collect();
        rows.sort_by(|(a, _), (b, _)| {
            keys.iter().map(|&i| a[i].cmp_for_sort(&b[i])).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
        });
    }
    let limit = user.limit.map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    rows.into_iter().take(limit).map(|(_, o)| o).collect()
}

/// A block partition's name as the kernel spells it (`disk_name()` in
/// block/partitions/core.c): the disk's own name for partition 0, else the
/// number appended, after a `p` when the disk's name ends in a digit.
pub fn part_name(disk: &str, partno: u64) -> String {
    match partno {
        0 => disk.to_string(),
        n if disk.ends_with(|c: char| c.is_ascii_digit()) => format!("{disk}p{n}"),
        n => format!("{disk}{n}"),
    }
}

/// A kernel-internal `dev_t` (`MKDEV`: major << 20 | minor) as `"major:minor"`.
pub fn dev_str(dev: u64) -> String {
    format!("{}:{}", (dev >> 20) & 0xfff, dev & 0xfffff)
}

/// The one input row of an ungrouped aggregate over no events, as SQL has it:
/// counts 0, an empty histogram, SUM/MIN/MAX/AVG and quantiles NULL. `None`
/// for row queries, grouped aggregates and APPROX_TOP_K (no groups, no rows).
pub(crate) fn empty_aggregate(user: &UserPlan) -> Option<Vec<Value>> {
    use ebq_front::plan::UserSource as S;
    // APPROX_TOP_K over no events has no keys to report: no rows.
    let aggregate = user.inputs.iter().all(|s| !matches!(s, S::Key(_) | S::Row(_) | S::TopK { .. }));
    if !aggregate || user.inputs.is_empty() {
        return None;
    }
    Some(
        user.inputs
            .iter()
            .map(|s| match s {
                S::Count | S::DistinctCount | S::Hll(_) => Value::U(0),
                S::Hist(_) => Value::Hist(vec![]),
                _ => Value::Null,
            })
            // Its distributions: sums of nothing, empty sketches.
            .chain(user.distributions.iter().flat_map(|d| match d {
                ebq_front::plan::Distribution::HistSum { .. } => vec![Value::U(0)],
                ebq_front::plan::Distribution::Sketch { .. } => vec![Value::Hist(vec![]), Value::U(0)],
            }))
            .collect(),
    )
}

#[cfg(test)]
mod part_name_tests {
    use super::part_name;

    #[test]
    fn partitions_are_named_as_the_kernel_names_them() {
        assert_eq!(part_name("vda", 0), "vda");
        assert_eq!(part_name("vda", 1), "vda1");
        assert_eq!(part_name("loop3", 2), "loop3p2");
        assert_eq!(part_name("nvme0n1", 1), "nvme0n1p1");
    }
}
