//! Histogram and quantile values in user space: bucket counters merged across
//! CPUs, panes and hidden groups → [`Value::Hist`] / quantile numbers → Arrow
//! `List<Struct<lo, hi, count>>` and back (for the text sinks).

use super::decode::{Merged, Store, Value};
use arrow_array::builder::{Int64Builder, ListBuilder, StructBuilder, UInt64Builder};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType as ArrowType, Field, Fields};
use ebq_front::bind::AggFunc;
use ebq_front::hist::{self, Bucket};
use ebq_front::plan::{KernelOutput, PhysicalPlan};
use std::sync::Arc;

/// The struct of one bucket: `lo` and `hi` in the argument's signedness, `count` u64.
fn bucket_fields(signed: bool) -> Fields {
    let bound = if signed { ArrowType::Int64 } else { ArrowType::UInt64 };
    Fields::from(vec![
        Field::new("lo", bound.clone(), false),
        Field::new("hi", bound, false),
        Field::new("count", ArrowType::UInt64, false),
    ])
}

/// The list element field (named `item`, as Arrow's list builder names it).
fn item_field(signed: bool) -> Arc<Field> {
    Arc::new(Field::new("item", ArrowType::Struct(bucket_fields(signed)), true))
}

/// Arrow type of a histogram column: `List<Struct<lo, hi, count>>`.
pub fn arrow_hist_type(signed: bool) -> ArrowType {
    ArrowType::List(item_field(signed))
}

/// Bounds as stored in Arrow: the top bucket's `hi` (2^64 or 2^63) saturates to the type's maximum.
fn clamp_bound(v: i128, signed: bool) -> i128 {
    if signed {
        v.clamp(i128::from(i64::MIN), i128::from(i64::MAX))
    } else {
        v.clamp(0, i128::from(u64::MAX))
    }
}

/// A histogram column from decoded rows (column `i`, which holds [`Value::Hist`]).
pub fn hist_column(rows: &[Vec<Value>], i: usize, signed: bool) -> ArrayRef {
    let values = StructBuilder::from_fields(bucket_fields(signed), 0);
    let mut list = ListBuilder::new(values).with_field(item_field(signed));
    for r in rows {
        if let Value::Hist(buckets) = &r[i] {
            let sb = list.values();
            for b in buckets {
                let (lo, hi) = (clamp_bound(b.lo, signed), clamp_bound(b.hi, signed));
                if signed {
                    sb.field_builder::<Int64Builder>(0).expect("lo").append_value(lo as i64);
                    sb.field_builder::<Int64Builder>(1).expect("hi").append_value(hi as i64);
                } else {
                    sb.field_builder::<UInt64Builder>(0).expect("lo").append_value(lo as u64);
                    sb.field_builder::<UInt64Builder>(1).expect("hi").append_value(hi as u64);
                }
                sb.field_builder::<UInt64Builder>(2).expect("count").append_value(b.count);
                sb.append(true);
            }
        }
        list.append(true);
    }
    Arc::new(list.finish())
}

/// The histogram at `row` of a list column, back as a [`Value::Hist`]
/// (saturated top bounds restored to 2^64 / 2^63).
pub fn hist_cell(col: &ArrayRef, row: usize) -> Value {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int64Type, UInt64Type};
    let list = col.as_list::<i32>();
    let item = list.value(row);
    let s = item.as_struct();
    let bound = |c: usize, j: usize| -> i128 {
        let a = s.column(c);
        match a.data_type() {
            ArrowType::Int64 => {
                let v = a.as_primitive::<Int64Type>().value(j);
                if v == i64::MAX {
                    1i128 << 63
                } else {
                    i128::from(v)
                }
            }
            _ => {
                let v = a.as_primitive::<UInt64Type>().value(j);
                if v == u64::MAX {
                    1i128 << 64
                } else {
                    i128::from(v)
                }
            }
        }
    };
    let counts = s.column(2).as_primitive::<UInt64Type>();
    Value::Hist((0..s.len()).map(|j| Bucket { lo: bound(0, j), hi: bound(1, j), count: counts.value(j) }).collect())
}

/// Adds a value's inline bucket counters (`len` u64s at `offset`) into `merged`.
pub fn add_counters(merged: &mut Merged, field: usize, bytes: &[u8], offset: u32, len: u16) {
    for j in 0..usize::from(len) {
        let o = offset as usize + 8 * j;
        let n = u64::from_ne_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
        if n > 0 {
            *merged.buckets.entry((Store::Field(field), j as i32)).or_insert(0) += n;
        }
    }
}

/// The histogram of value field `field`: buckets from the first to the last
/// non-empty one (empty ones between included, so bars show the gaps).
pub fn hist_value(plan: &PhysicalPlan, merged: &Merged, field: usize) -> Value {
    let KernelOutput::Aggregate { slots, .. } = &plan.programs[0].output else { return Value::Hist(vec![]) };
    let Some(slot) = slots.iter().find(|s| s.field == field) else { return Value::Hist(vec![]) };
    let signed = slot.arg.ty().is_signed();
    let counts: Vec<(i32, u64)> = merged
        .buckets
        .range((Store::Field(field), i32::MIN)..=(Store::Field(field), i32::MAX))
        .map(|((_, j), n)| (*j, *n))
        .collect();
    let (Some(first), Some(last)) = (counts.first(), counts.last()) else { return Value::Hist(vec![]) };
    let bounds = |j: u32| match slot.func {
        AggFunc::Lhist(l) => l.bounds(j, signed),
        AggFunc::Hist(log2) => log2.bounds(j, signed),
        _ => hist::hist_bounds(j, signed),
    };
    let buckets = (first.0..=last.0)
        .map(|j| {
            let (lo, hi) = bounds(j as u32);
            let count = counts.iter().find(|c| c.0 == j).map_or(0, |c| c.1);
            Bucket { lo, hi, count }
        })
        .collect();
    Value::Hist(buckets)
}

/// The q-quantile (millionths) of sketch `sketch`; 0 without values.
pub fn quantile_value(plan: &PhysicalPlan, merged: &Merged, sketch: usize, ppm: u32) -> Value {
    let signed = match &plan.programs[0].output {
        KernelOutput::Aggregate { sketches, .. } => sketches.get(sketch).is_some_and(|a| a.ty().is_signed()),
        KernelOutput::Rows { .. } => false,
    };
    let buckets = merged
        .buckets
        .range((Store::Sketch(sketch), i32::MIN)..=(Store::Sketch(sketch), i32::MAX))
        .map(|((_, s), n)| (*s, *n));
    let q = hist::sketch_quantile(buckets, ppm).unwrap_or(0);
    if signed {
        Value::I(q as i64)
    } else {
        Value::U(q as u64)
    }
}

/// The extra values of one distribution of a group (see
/// [`ebq_front::plan::Distribution`]): a histogram's exact sum, or a sketch's
/// buckets (their integer ranges, every non-empty bucket) and exact sum.
pub fn distribution(merged: &Merged, d: &ebq_front::plan::Distribution) -> Vec<Value> {
    use ebq_front::plan::Distribution;
    match *d {
        Distribution::HistSum { sum, .. } => vec![merged.fields[sum].clone()],
        Distribution::Sketch { sketch, sum } => {
            let buckets = merged
                .buckets
                .range((Store::Sketch(sketch), i32::MIN)..=(Store::Sketch(sketch), i32::MAX))
                .map(|((_, code), n)| {
                    let (lo, hi) = hist::sketch_bounds(*code);
                    Bucket { lo, hi, count: *n }
                })
                .collect();
            vec![Value::Hist(buckets), merged.fields[sum].clone()]
        }
    }
}
