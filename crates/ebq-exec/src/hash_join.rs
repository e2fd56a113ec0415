//! The join of one window of two streams: the second stream's rows are
//! hashed on their keys, each row of the first stream probes them in arrival
//! order (so output follows the first stream), then the residual condition
//! filters the joined rows, an aggregate groups them if the query has one,
//! and the user plan filters, projects, sorts and limits.

use super::decode::Value;
use super::join_groups::{self, KeyPart};
use super::user;
use ebq_front::bind::{JoinAggregate, JoinKey, PostExpr};
use ebq_front::plan::UserPlan;
use ebq_front::types::DataType;
use std::collections::HashMap;

/// Inner equi-join: every (left, right) pair whose keys are equal, as the
/// left row's values followed by the right row's, in the left rows' order
/// (and the right rows' order within one left row).
pub fn hash_join<'a>(
    keys: &[JoinKey],
    left: impl Iterator<Item = &'a Vec<Value>>,
    right: impl Iterator<Item = &'a Vec<Value>>,
) -> Vec<Vec<Value>> {
    let key = |row: &[Value], side: usize| -> Vec<KeyPart> {
        keys.iter().map(|k| key_part(&row[if side == 0 { k.left } else { k.right }], k.ty)).collect()
    };
    let mut by_key: HashMap<Vec<KeyPart>, Vec<&Vec<Value>>> = HashMap::new();
    for r in right {
        by_key.entry(key(r, 1)).or_default().push(r);
    }
    let mut joined = vec![];
    for l in left {
        for r in by_key.get(&key(l, 0)).into_iter().flatten() {
            joined.push(l.iter().chain(r.iter()).cloned().collect::<Vec<Value>>());
        }
    }
    joined
}

/// A window's joined rows → its output rows: `residual` keeps the rows it
/// holds for, `aggregate` groups them (the user plan then works on groups,
/// sorted by their keys), the user plan does the rest.
pub fn join_output(
    residual: Option<&PostExpr>,
    aggregate: Option<&JoinAggregate>,
    user: &UserPlan,
    joined: Vec<Vec<Value>>,
) -> Vec<Vec<Value>> {
    let kept = match residual {
        Some(r) => joined.into_iter().filter(|row| matches!(user::eval(r, row, &[]), Value::B(true))).collect(),
        None => joined,
    };
    match aggregate {
        None => user::apply(user, kept, false),
        Some(a) => user::apply(user, join_groups::group_rows(a, kept), true),
    }
}

/// `v` as compared in `ty`: integers as their value in that type (as the
/// kernel converts both operands of a comparison).
fn key_part(v: &Value, ty: DataType) -> KeyPart {
    match v {
        Value::I(i) if !ty.is_signed() => KeyPart::Int(i128::from(*i as u64)),
        Value::U(u) if ty.is_signed() => KeyPart::Int(i128::from(*u as i64)),
        other => KeyPart::of(other),
    }
}
