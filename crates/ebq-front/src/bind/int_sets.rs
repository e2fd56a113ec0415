//! The integers a condition allows one expression: `e.id IN (0, 17)` binds
//! as `e.id == 0 || e.id == 17`. A union branch that reads a view ANDs the
//! view's IN list with the query's (`io.ops`' system calls, the report's
//! `call IN (…)`). Two such lists over one expression that share no value
//! rule the branch out at plan time; lists that share some are one list, the
//! only check the kernel then runs.

use super::{and_all, BinaryOp, ScalarExpr};

/// `expr` is one of `values` (in the order the first list wrote them);
/// `eq` is one of the list's equalities, the template a rebuilt list copies.
struct IntSet<'a> {
    expr: &'a ScalarExpr,
    values: Vec<u64>,
    eq: &'a ScalarExpr,
}

impl ScalarExpr {
    /// `self` as an IN list over one expression: an `expr == constant` or an
    /// OR of such over the same `expr`.
    fn int_set(&self) -> Option<IntSet<'_>> {
        match self {
            ScalarExpr::Binary { op: BinaryOp::Eq, left, right, .. } => {
                let (expr, value) = match (left.const_int(), right.const_int()) {
                    (None, Some(v)) => (left.as_ref(), v),
                    (Some(v), None) => (right.as_ref(), v),
                    _ => return None,
                };
                Some(IntSet { expr, values: vec![value], eq: self })
            }
            ScalarExpr::Binary { op: BinaryOp::Or, left, right, .. } => {
                let (mut l, r) = (left.int_set()?, right.int_set()?);
                (l.expr == r.expr).then(|| {
                    for v in r.values {
                        if !l.values.contains(&v) {
                            l.values.push(v);
                        }
                    }
                    l
                })
            }
            _ => None,
        }
    }

    /// The parts of an AND chain (`self` alone when it is no AND).
    fn conjuncts(&self) -> Vec<&ScalarExpr> {
        match self {
            ScalarExpr::Binary { op: BinaryOp::And, left, right, .. } => {
                let mut parts = left.conjuncts();
                parts.extend(right.conjuncts());
                parts
            }
            other => vec![other],
        }
    }

    /// True when two IN lists ANDed in this condition over one expression
    /// share no value: no event passes it.
    pub(super) fn has_disjoint_int_sets(&self) -> bool {
        let sets: Vec<IntSet> = self.conjuncts().into_iter().filter_map(ScalarExpr::int_set).collect();
        sets.iter().enumerate().any(|(i, a)| {
            sets[i + 1..].iter().any(|b| a.expr == b.expr && !a.values.iter().any(|v| b.values.contains(v)))
        })
    }

    /// The condition with the IN lists its AND chain holds over one
    /// expression made one: the first list, less the values a later one
    /// leaves out, where the first stood; the later lists dropped. A
    /// condition with one list or none per expression is returned as it was.
    pub fn with_int_sets_intersected(self) -> ScalarExpr {
        let parts = self.conjuncts();
        let sets: Vec<Option<IntSet>> = parts.iter().map(|p| p.int_set()).collect();
        let later = |i: usize, s: &IntSet| sets[..i].iter().flatten().any(|f| f.expr == s.expr);
        if !sets.iter().enumerate().any(|(i, s)| s.as_ref().is_some_and(|s| later(i, s))) {
            return self;
        }
        let mut kept = vec![];
        for (i, part) in parts.iter().enumerate() {
            match &sets[i] {
                Some(s) if later(i, s) => {}
                Some(s) => {
                    let others = sets[i + 1..].iter().flatten().filter(|o| o.expr == s.expr);
                    let values: Vec<u64> = others.fold(s.values.clone(), |mut vs, o| {
                        vs.retain(|v| o.values.contains(v));
                        vs
                    });
                    kept.push(list(s, &values));
                }
                None => kept.push((*part).clone()),
            }
        }
        and_all(kept).unwrap_or(ScalarExpr::Bool(true))
    }
}

/// `expr == v1 || expr == v2 …` for `values`, each equality a copy of the
/// set's template with its constant replaced; `false` for no value.
fn list(set: &IntSet, values: &[u64]) -> ScalarExpr {
    let eq = |value: u64| match set.eq.clone() {
        ScalarExpr::Binary { op, left, right, ty, operand_ty } => {
            let with = |e: Box<ScalarExpr>| match *e {
                ScalarExpr::Int { ty, .. } => Box::new(ScalarExpr::Int { value, ty }),
                ScalarExpr::Cast { expr, ty } if expr.const_int().is_some() => {
                    Box::new(ScalarExpr::Cast { expr: Box::new(ScalarExpr::Int { value, ty: expr.ty() }), ty })
                }
                other => Box::new(other),
            };
            ScalarExpr::Binary { op, left: with(left), right: with(right), ty, operand_ty }
        }
        other => other,
    };
    values
        .iter()
        .map(|v| eq(*v))
        .reduce(|l, r| {
            let (ty, operand_ty) = (l.ty(), l.ty());
            ScalarExpr::Binary { op: BinaryOp::Or, left: Box::new(l), right: Box::new(r), ty, operand_ty }
        })
        .unwrap_or(ScalarExpr::Bool(false))
}
