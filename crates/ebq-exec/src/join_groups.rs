//! GROUP BY and aggregates over a window's joined rows (a join of two
//! streams keeps its rows in user space, so it aggregates there too).

use super::decode::Value;
use super::user::eval;
use ebq_front::bind::{AggFunc, JoinAggregate};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// A value as a hash key: integers by value whatever their width and sign.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum KeyPart {
    Int(i128),
    Str(String),
    Bool(bool),
    Float(u64),
}

impl KeyPart {
    pub(crate) fn of(v: &Value) -> KeyPart {
        match v {
            Value::U(u) => KeyPart::Int(i128::from(*u)),
            Value::I(i) => KeyPart::Int(i128::from(*i)),
            Value::B(b) => KeyPart::Bool(*b),
            Value::S(s) => KeyPart::Str(s.clone()),
            Value::F(f) => KeyPart::Float(f.to_bits()),
            Value::Hist(_) | Value::Null => unreachable!("histograms and NULLs are aggregates, never keys"),
        }
    }
}

/// One aggregate's running state.
enum Acc {
    Count(u64),
    /// SUM wraps at 64 bits, as the kernel's sums do.
    Sum {
        bits: u64,
        signed: bool,
    },
    /// AVG divides the (wrapping) sum by the count, as the kernel's AVG does.
    Avg {
        bits: u64,
        signed: bool,
        count: u64,
    },
    Extreme {
        best: Option<Value>,
        keep: Ordering,
    },
    Distinct(HashSet<KeyPart>),
}

impl Acc {
    fn new(func: AggFunc, signed: bool) -> Acc {
        match func {
            AggFunc::Count => Acc::Count(0),
            AggFunc::Sum => Acc::Sum { bits: 0, signed },
            AggFunc::Avg => Acc::Avg { bits: 0, signed, count: 0 },
            AggFunc::Min => Acc::Extreme { best: None, keep: Ordering::Less },
            AggFunc::Max => Acc::Extreme { best: None, keep: Ordering::Greater },
            AggFunc::CountDistinct => Acc::Distinct(HashSet::new()),
            other => unreachable!("the binder refuses {other} over a join"),
        }
    }

    fn add(&mut self, v: Option<Value>) {
        let bits = |v: &Value| match v {
            Value::U(u) => *u,
            Value::I(i) => *i as u64,
            Value::B(b) => u64::from(*b),
            _ => 0,
        };
        match (self, v) {
            (Acc::Count(n), _) => *n += 1,
            (Acc::Sum { bits: s, .. }, Some(v)) => *s = s.wrapping_add(bits(&v)),
            (Acc::Avg { bits: s, count, .. }, Some(v)) => {
                *s = s.wrapping_add(bits(&v));
                *count += 1;
            }
            (Acc::Extreme { best, keep }, Some(v)) => {
                if best.as_ref().is_none_or(|b| v.cmp_for_sort(b) == *keep) {
                    *best = Some(v);
                }
            }
            (Acc::Distinct(set), Some(v)) => {
                set.insert(KeyPart::of(&v));
            }
            (_, None) => unreachable!("only COUNT(*) has no argument"),
        }
    }

    fn value(self) -> Value {
        match self {
            Acc::Count(n) => Value::U(n),
            Acc::Sum { bits, signed: true } => Value::I(bits as i64),
            Acc::Sum { bits, signed: false } => Value::U(bits),
            Acc::Avg { bits, signed, count } => {
                let sum = if signed { bits as i64 as f64 } else { bits as f64 };
                Value::F(if count == 0 { 0.0 } else { sum / count as f64 })
            }
            Acc::Extreme { best, .. } => best.expect("a group has at least one row"),
            Acc::Distinct(set) => Value::U(set.len() as u64),
        }
    }
}

/// Groups `rows` (joined rows) by the aggregate's keys, in order of first
/// appearance; returns one row per group: its keys, then its aggregates.
pub(crate) fn group_rows(agg: &JoinAggregate, rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    let mut index: HashMap<Vec<KeyPart>, usize> = HashMap::new();
    let mut groups: Vec<(Vec<Value>, Vec<Acc>)> = vec![];
    for row in rows {
        let keys: Vec<Value> = agg.keys.iter().map(|k| eval(k, &row, &[])).collect();
        let slot = *index.entry(keys.iter().map(KeyPart::of).collect()).or_insert_with(|| {
            let accs = agg.aggs.iter().map(|(f, _, ty)| Acc::new(*f, ty.is_signed())).collect();
            groups.push((keys, accs));
            groups.len() - 1
        });
        for (acc, (_, arg, _)) in groups[slot].1.iter_mut().zip(&agg.aggs) {
            acc.add(arg.as_ref().map(|a| eval(a, &row, &[])));
        }
    }
    groups
        .into_iter()
        .map(|(mut keys, accs)| {
            keys.extend(accs.into_iter().map(Acc::value));
            keys
        })
        .collect()
}
