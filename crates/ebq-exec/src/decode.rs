//! Bytes from maps and ring buffers → typed values → Arrow record batches.

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder,
    UInt16Builder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType as ArrowType, Field, Schema, SchemaRef};
use ebq_front::bind::{AggFunc, TopKPart};
use ebq_front::plan::{KernelOutput, PhysicalPlan, StructField, StructLayout, UserSource};
use ebq_front::topk::TopRow;
use ebq_front::types::DataType;
use std::sync::Arc;

/// One decoded value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Unsigned integer.
    U(u64),
    /// Signed integer.
    I(i64),
    /// Float.
    F(f64),
    /// String.
    S(String),
    /// Boolean.
    B(bool),
    /// A histogram (HIST, LHIST): buckets in value order.
    Hist(Vec<ebq_front::hist::Bucket>),
    /// SQL's NULL: SUM, MIN, MAX, AVG or a quantile of no events (the one row
    /// an ungrouped aggregate gives for an empty window). An Arrow null in
    /// batches; empty in tables and CSV, `null` in JSON. Expressions over it
    /// give NULL, and a NULL condition is false.
    Null,
}

impl Value {
    /// Total order for sorting output: numbers numerically, strings bytewise.
    pub fn cmp_for_sort(&self, other: &Value) -> std::cmp::Ordering {
        use Value::*;
        match (self, other) {
            (U(a), U(b)) => a.cmp(b),
            (I(a), I(b)) => a.cmp(b),
            (F(a), F(b)) => a.total_cmp(b),
            (S(a), S(b)) => a.cmp(b),
            (B(a), B(b)) => a.cmp(b),
            (a, b) => a.rank().cmp(&b.rank()),
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::U(_) | Value::I(_) | Value::F(_) => 0,
            Value::S(_) => 1,
            Value::B(_) => 2,
            Value::Hist(_) => 3,
            // NULLs sort last, as PostgreSQL sorts them ascending.
            Value::Null => 4,
        }
    }
}

/// Arrow type of an ebq type.
pub fn arrow_type(ty: DataType) -> ArrowType {
    match ty {
        DataType::Int { bits: 8, signed: true } => ArrowType::Int8,
        DataType::Int { bits: 16, signed: true } => ArrowType::Int16,
        DataType::Int { bits: 32, signed: true } => ArrowType::Int32,
        DataType::Int { signed: true, .. } => ArrowType::Int64,
        DataType::Int { bits: 8, signed: false } => ArrowType::UInt8,
        DataType::Int { bits: 16, signed: false } => ArrowType::UInt16,
        DataType::Int { bits: 32, signed: false } => ArrowType::UInt32,
        DataType::Int { signed: false, .. } => ArrowType::UInt64,
        DataType::Bool => ArrowType::Boolean,
        DataType::Str { .. } | DataType::Stack { .. } => ArrowType::Utf8,
        DataType::Float => ArrowType::Float64,
        DataType::Hist { signed } => super::hist_values::arrow_hist_type(signed),
        DataType::Buckets { .. } | DataType::Registers { .. } => {
            unreachable!("bucket counters and registers are storage, never output")
        }
    }
}

/// The Arrow schema of a plan's output. A column is nullable when it is NULL
/// in the row of an ungrouped aggregate over no events (SUM, MAX, AVG, …),
/// and a string column when the plan reads a string from user memory, which
/// may be unreadable ([`null_string`]).
pub fn schema(plan: &PhysicalPlan) -> SchemaRef {
    let empty = super::user::empty_aggregate(&plan.user);
    let null_strings = plan.programs.iter().any(|k| match &k.output {
        KernelOutput::Rows { record, .. } => record.has_null_strings(),
        KernelOutput::Aggregate { key, .. } => key.has_null_strings(),
    });
    let nullable = |c: &ebq_front::plan::UserColumn| {
        (null_strings && matches!(c.ty, DataType::Str { .. }))
            || empty.as_ref().is_some_and(|row| super::user::eval(&c.expr, row, &[]) == Value::Null)
    };
    Arc::new(Schema::new(
        plan.user.columns.iter().map(|c| Field::new(&c.name, arrow_type(c.ty), nullable(c))).collect::<Vec<_>>(),
    ))
}

/// Is the string field `f` of `bytes` NULL: a string from user memory that
/// could not be read, which the kernel marks with a NUL then a 1
/// (`ebq_user_str_read` in the generated C; an empty string has a NUL then
/// a NUL). Only marked fields carry it: past the NUL of any other string a
/// ring record holds stale bytes.
pub(crate) fn null_string(bytes: &[u8], f: &StructField) -> bool {
    let at = f.offset as usize;
    f.null_marked && bytes.get(at) == Some(&0) && bytes.get(at + 1) == Some(&1)
}

fn read_u64(bytes: &[u8], offset: u32, size: u32) -> u64 {
    let o = offset as usize;
    match size {
        1 => u64::from(bytes[o]),
        2 => u64::from(u16::from_ne_bytes(bytes[o..o + 2].try_into().unwrap())),
        4 => u64::from(u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap())),
        _ => u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap()),
    }
}

/// A fixed string buffer as text: up to the first NUL (or the whole buffer),
/// invalid UTF-8 and backslashes escaped reversibly ([`crate::escape::escape_bytes`]).
pub(crate) fn c_str(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    crate::escape::escape_bytes(&raw[..end])
}

/// Decodes one struct field.
pub fn field_value(bytes: &[u8], f: &StructField) -> Value {
    match f.ty {
        DataType::Str { .. } if null_string(bytes, f) => Value::Null,
        DataType::Str { cap } if f.argv => {
            Value::S(super::argv::quoted(&bytes[f.offset as usize..(f.offset + u32::from(cap)) as usize]))
        }
        DataType::Str { cap } => {
            Value::S(c_str(&bytes[f.offset as usize..(f.offset + u32::from(cap)) as usize]).into_owned())
        }
        DataType::Int { bits, signed: true } => {
            let raw = read_u64(bytes, f.offset, u32::from(bits) / 8);
            let shift = 64 - u32::from(bits);
            Value::I(((raw << shift) as i64) >> shift)
        }
        DataType::Int { bits, signed: false } => Value::U(read_u64(bytes, f.offset, u32::from(bits) / 8)),
        // The raw id; the runtime symbolizes it (runtime::stacks).
        DataType::Stack { .. } => Value::U(read_u64(bytes, f.offset, 8)),
        DataType::Bool => Value::B(bytes[f.offset as usize] != 0),
        DataType::Float => Value::F(f64::from_bits(read_u64(bytes, f.offset, 8))),
        DataType::Hist { .. } | DataType::Buckets { .. } | DataType::Registers { .. } => {
            unreachable!("bucket counters and registers are merged by merge_percpu")
        }
    }
}

/// Where histogram buckets were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Store {
    /// Inline counters of value field `i` (HIST, LHIST).
    Field(usize),
    /// Quantile sketch `i` (its entries in `ebq_sketch`).
    Sketch(usize),
}

/// One group's values merged across CPUs: count plus each value field.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// Events in the group.
    pub count: u64,
    /// Value fields by layout index (index 0 is the count).
    pub fields: Vec<Value>,
    /// Non-zero bucket counts of histograms and sketches: (where, bucket) → count.
    pub buckets: std::collections::BTreeMap<(Store, i32), u64>,
    /// HyperLogLog registers by value field, merged by maximum.
    pub registers: std::collections::BTreeMap<usize, Vec<u8>>,
    /// APPROX_TOP_K sketches by value field: counters added, candidates united.
    pub top_k: std::collections::BTreeMap<usize, ebq_front::topk::Summary>,
}

/// Merges the per-CPU copies of a value struct. CPUs that saw no event of the
/// group (count 0) are skipped: their MIN/MAX slots were never set.
pub fn merge_percpu(value: &StructLayout, funcs: &[Option<AggFunc>], per_cpu: &[Vec<u8>]) -> Merged {
    let count_field = &value.fields[0];
    let mut count = 0u64;
    let mut fields: Vec<Option<Value>> = vec![None; value.fields.len()];
    let mut counters = Merged::default();
    for bytes in per_cpu {
        let c = read_u64(bytes, count_field.offset, 8);
        if c == 0 {
            continue;
        }
        count += c;
        for (i, f) in value.fields.iter().enumerate().skip(1) {
            let Some(func) = funcs[i] else { continue };
            if let AggFunc::ApproxTopK { .. } = func {
                let at = f.offset as usize;
                counters.top_k.entry(i).or_default().add_bytes(&bytes[at..at + f.ty.byte_size() as usize]);
                continue;
            }
            if let DataType::Buckets { len } = f.ty {
                super::hist_values::add_counters(&mut counters, i, bytes, f.offset, len);
                continue;
            }
            if let DataType::Registers { len } = f.ty {
                let at = f.offset as usize;
                ebq_front::hll::merge(counters.registers.entry(i).or_default(), &bytes[at..at + usize::from(len)]);
                continue;
            }
            let v = field_value(bytes, f);
            fields[i] = Some(match (fields[i].take(), v) {
                (None, v) => v,
                (Some(Value::U(a)), Value::U(b)) => Value::U(match func {
                    AggFunc::Min => a.min(b),
                    AggFunc::Max => a.max(b),
                    _ => a.wrapping_add(b),
                }),
                (Some(Value::I(a)), Value::I(b)) => Value::I(match func {
                    AggFunc::Min => a.min(b),
                    AggFunc::Max => a.max(b),
                    _ => a.wrapping_add(b),
                }),
                (Some(a), _) => a,
            });
        }
    }
    Merged {
        count,
        fields: fields.into_iter().map(|v| v.unwrap_or(Value::U(0))).collect(),
        buckets: counters.buckets,
        registers: counters.registers,
        top_k: counters.top_k,
    }
}

/// Adds `b` into `a`: counts and sums add, MIN/MAX keep the extreme. Used to
/// merge panes of a sliding window and the hidden groups of COUNT(DISTINCT).
pub fn combine(a: &mut Merged, b: &Merged, funcs: &[Option<AggFunc>]) {
    if b.count == 0 {
        return;
    }
    if a.count == 0 {
        *a = b.clone();
        return;
    }
    a.count += b.count;
    for (k, n) in &b.buckets {
        *a.buckets.entry(*k).or_insert(0) += n;
    }
    for (i, r) in &b.registers {
        ebq_front::hll::merge(a.registers.entry(*i).or_default(), r);
    }
    for (i, t) in &b.top_k {
        a.top_k.entry(*i).or_default().merge(t);
    }
    for (i, func) in funcs.iter().enumerate() {
        let Some(func) = func else { continue };
        let merged = match (&a.fields[i], &b.fields[i]) {
            (Value::U(x), Value::U(y)) => Value::U(match func {
                AggFunc::Min => *x.min(y),
                AggFunc::Max => *x.max(y),
                _ => x.wrapping_add(*y),
            }),
            (Value::I(x), Value::I(y)) => Value::I(match func {
                AggFunc::Min => *x.min(y),
                AggFunc::Max => *x.max(y),
                _ => x.wrapping_add(*y),
            }),
            (x, _) => x.clone(),
        };
        a.fields[i] = merged;
    }
}

/// Which function fills each value field (index 0, the count, has none).
pub fn slot_funcs(plan: &PhysicalPlan) -> Vec<Option<AggFunc>> {
    match &plan.programs[0].output {
        KernelOutput::Aggregate { value, slots, .. } => {
            let mut funcs = vec![None; value.fields.len()];
            for s in slots {
                funcs[s.field] = Some(s.func);
            }
            funcs
        }
        KernelOutput::Rows { .. } => vec![],
    }
}

/// The rows an APPROX_TOP_K sketch expands its group into: the `k`
/// heaviest candidates of its merged sketch, bounded by its own mass (N
/// events, or W weighted). `None` when the plan has none.
pub fn top_k_rows(plan: &PhysicalPlan, merged: &Merged) -> Option<Vec<TopRow>> {
    let KernelOutput::Aggregate { slots, .. } = &plan.programs[0].output else { return None };
    let slot = slots.iter().find(|s| matches!(s.func, AggFunc::ApproxTopK { .. }))?;
    let AggFunc::ApproxTopK { k, .. } = slot.func else { return None };
    Some(merged.top_k.get(&slot.field).map_or(vec![], |t| t.top(k)))
}

/// One reported APPROX_TOP_K key: its columns, the key typed as its argument.
fn top_k_value(plan: &PhysicalPlan, field: usize, part: TopKPart, row: Option<&TopRow>) -> Value {
    let Some(row) = row else { return Value::Null };
    let signed = match &plan.programs[0].output {
        KernelOutput::Aggregate { slots, .. } => slots.iter().any(|s| s.field == field && s.arg.ty().is_signed()),
        KernelOutput::Rows { .. } => false,
    };
    match part {
        TopKPart::Key if signed => Value::I(row.key as i64),
        TopKPart::Key => Value::U(row.key),
        TopKPart::Estimate => Value::U(row.estimate),
        TopKPart::ErrorBound => Value::U(row.error_bound),
    }
}

/// The user plan's inputs for one group, then its distributions' values
/// (`UserPlan::distributions`, which `user::apply` passes through as the
/// row's extras); `distinct` is the number of hidden groups it was reduced
/// from (COUNT(DISTINCT …)); `top` the APPROX_TOP_K row this one is, when
/// the plan has one ([`top_k_rows`]).
pub fn group_inputs(
    plan: &PhysicalPlan,
    key_layout: &StructLayout,
    key: &[u8],
    merged: &Merged,
    distinct: u64,
    top: Option<&TopRow>,
) -> Vec<Value> {
    plan.user
        .inputs
        .iter()
        .map(|source| match *source {
            UserSource::Key(i) => field_value(key, &key_layout.fields[i]),
            UserSource::Count => Value::U(merged.count),
            UserSource::DistinctCount => Value::U(distinct),
            UserSource::Slot(i) => merged.fields[i].clone(),
            UserSource::Avg(i) => {
                let sum = match merged.fields[i] {
                    Value::U(u) => u as f64,
                    Value::I(i) => i as f64,
                    _ => 0.0,
                };
                Value::F(if merged.count == 0 { 0.0 } else { sum / merged.count as f64 })
            }
            UserSource::Hist(i) => super::hist_values::hist_value(plan, merged, i),
            UserSource::Hll(i) => Value::U(merged.registers.get(&i).map_or(0, |r| ebq_front::hll::estimate(r))),
            UserSource::Quantile { sketch, ppm } => super::hist_values::quantile_value(plan, merged, sketch, ppm),
            UserSource::TopK { field, part } => top_k_value(plan, field, part, top),
            UserSource::Row(_) => unreachable!("aggregate plans have no row fields"),
        })
        .chain(plan.user.distributions.iter().flat_map(|d| super::hist_values::distribution(merged, d)))
        .collect()
}

/// The user plan's inputs for one ring-buffer record.
pub fn record_inputs(plan: &PhysicalPlan, record: &StructLayout, bytes: &[u8]) -> Vec<Value> {
    plan.user
        .inputs
        .iter()
        .zip(&plan.user.columns)
        .map(|(source, c)| match *source {
            UserSource::Row(i) => match (field_value(bytes, &record.fields[i]), c.ty) {
                (Value::U(u), DataType::Bool) => Value::B(u != 0),
                (v, _) => v,
            },
            _ => unreachable!("row plans only have row fields"),
        })
        .collect()
}

macro_rules! column {
    ($builder:ty, $rows:expr, $i:expr, $pat:pat => $v:expr) => {{
        let mut b = <$builder>::with_capacity($rows.len());
        for r in $rows {
            match &r[$i] {
                $pat => b.append_value($v),
                Value::Null => b.append_null(),
                _ => b.append_value(Default::default()),
            }
        }
        Arc::new(b.finish()) as ArrayRef
    }};
}

/// Builds a record batch from decoded rows.
pub fn to_batch(schema: &SchemaRef, rows: &[Vec<Value>]) -> RecordBatch {
    let columns: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| match f.data_type() {
            ArrowType::Int8 => column!(Int8Builder, rows, i, Value::I(v) => *v as i8),
            ArrowType::Int16 => column!(Int16Builder, rows, i, Value::I(v) => *v as i16),
            ArrowType::Int32 => column!(Int32Builder, rows, i, Value::I(v) => *v as i32),
            ArrowType::Int64 => column!(Int64Builder, rows, i, Value::I(v) => *v),
            ArrowType::UInt8 => column!(UInt8Builder, rows, i, Value::U(v) => *v as u8),
            ArrowType::UInt16 => column!(UInt16Builder, rows, i, Value::U(v) => *v as u16),
            ArrowType::UInt32 => column!(UInt32Builder, rows, i, Value::U(v) => *v as u32),
            ArrowType::UInt64 => column!(UInt64Builder, rows, i, Value::U(v) => *v),
            ArrowType::Float64 => column!(Float64Builder, rows, i, Value::F(v) => *v),
            ArrowType::Boolean => column!(BooleanBuilder, rows, i, Value::B(v) => *v),
            ArrowType::List(item) => {
                let signed = matches!(item.data_type(), ArrowType::Struct(f) if f[0].data_type() == &ArrowType::Int64);
                super::hist_values::hist_column(rows, i, signed)
            }
            _ => {
                let mut b = StringBuilder::new();
                for r in rows {
                    match &r[i] {
                        Value::S(s) => b.append_value(s),
                        Value::Null => b.append_null(),
                        _ => b.append_value(""),
                    }
                }
                Arc::new(b.finish()) as ArrayRef
            }
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns).expect("columns match the schema they were built from")
}
