//! Ring-buffer records decoded straight into Arrow column builders.
//!
//! Why: a streamed row query spends its user-space time per record. Going
//! through a `Vec<Value>` per row (and a `String` per string column) before
//! building the batch allocates several times per event; appending each
//! field to its column's builder allocates nothing per row. Used whenever
//! the user plan has nothing to do per row but project (no ORDER BY, which
//! needs the rows held as values); LIMIT slices the finished batch.

use arrow_array::builder::{
    BooleanBuilder, Int16Builder, Int32Builder, Int64Builder, Int8Builder, StringBuilder, UInt16Builder, UInt32Builder,
    UInt64Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use ebq_front::plan::{PhysicalPlan, StructLayout, UserSource};
use ebq_front::types::DataType;
use std::sync::Arc;

/// One output column: where its field sits in the record, and its builder.
struct Column {
    offset: usize,
    builder: Builder,
    /// The field, for a string's NULL mark ([`super::decode::null_string`]).
    field: ebq_front::plan::StructField,
}

/// A builder per Arrow type a record field can have.
enum Builder {
    I8(Int8Builder),
    I16(Int16Builder),
    I32(Int32Builder),
    I64(Int64Builder),
    U8(UInt8Builder),
    U16(UInt16Builder),
    U32(UInt32Builder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Str { cap: usize, builder: StringBuilder },
}

/// Builds record batches from raw ring-buffer records.
pub struct RowColumns {
    schema: SchemaRef,
    columns: Vec<Column>,
    rows: usize,
}

impl RowColumns {
    /// Decoders for `plan`'s record layout, or `None` when the user plan
    /// needs rows as values (ORDER BY) or a column is not a plain field.
    pub fn new(plan: &PhysicalPlan, record: &StructLayout, schema: SchemaRef) -> Option<RowColumns> {
        if !plan.user.order_by.is_empty() || plan.user.having.is_some() {
            return None;
        }
        let mut columns = vec![];
        for (i, c) in plan.user.columns.iter().enumerate() {
            // Row plans output input i as column i; anything else takes the general path.
            if !matches!(c.expr, ebq_front::bind::PostExpr::Ref(ebq_front::bind::Input { index, .. }) if index == i) {
                return None;
            }
            let UserSource::Row(p) = plan.user.inputs[i] else { return None };
            let field = &record.fields[p];
            let builder = match (c.ty, field.ty) {
                (DataType::Bool, _) => Builder::Bool(BooleanBuilder::new()),
                (DataType::Str { .. }, DataType::Str { cap }) => {
                    Builder::Str { cap: usize::from(cap), builder: StringBuilder::new() }
                }
                (DataType::Int { bits, signed }, DataType::Int { bits: stored, .. }) if bits == stored => {
                    match (bits, signed) {
                        (8, true) => Builder::I8(Int8Builder::new()),
                        (16, true) => Builder::I16(Int16Builder::new()),
                        (32, true) => Builder::I32(Int32Builder::new()),
                        (_, true) => Builder::I64(Int64Builder::new()),
                        (8, false) => Builder::U8(UInt8Builder::new()),
                        (16, false) => Builder::U16(UInt16Builder::new()),
                        (32, false) => Builder::U32(UInt32Builder::new()),
                        (_, false) => Builder::U64(UInt64Builder::new()),
                    }
                }
                _ => return None,
            };
            columns.push(Column { offset: field.offset as usize, builder, field: field.clone() });
        }
        Some(RowColumns { schema, columns, rows: 0 })
    }

    /// Appends one record (at least the layout's size; checked by the caller).
    pub fn append(&mut self, bytes: &[u8]) {
        for c in &mut self.columns {
            let o = c.offset;
            match &mut c.builder {
                Builder::I8(b) => b.append_value(bytes[o] as i8),
                Builder::I16(b) => b.append_value(i16::from_ne_bytes(array(bytes, o))),
                Builder::I32(b) => b.append_value(i32::from_ne_bytes(array(bytes, o))),
                Builder::I64(b) => b.append_value(i64::from_ne_bytes(array(bytes, o))),
                Builder::U8(b) => b.append_value(bytes[o]),
                Builder::U16(b) => b.append_value(u16::from_ne_bytes(array(bytes, o))),
                Builder::U32(b) => b.append_value(u32::from_ne_bytes(array(bytes, o))),
                Builder::U64(b) => b.append_value(u64::from_ne_bytes(array(bytes, o))),
                Builder::Bool(b) => b.append_value(bytes[o] != 0),
                Builder::Str { builder, .. } if super::decode::null_string(bytes, &c.field) => builder.append_null(),
                Builder::Str { cap, builder } if c.field.argv => {
                    builder.append_value(super::argv::quoted(&bytes[o..o + *cap]))
                }
                Builder::Str { cap, builder } => builder.append_value(super::decode::c_str(&bytes[o..o + *cap])),
            }
        }
        self.rows += 1;
    }

    /// True when no row is waiting.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The rows appended so far as one batch; the builders start empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let arrays: Vec<ArrayRef> = self
            .columns
            .iter_mut()
            .map(|c| match &mut c.builder {
                Builder::I8(b) => Arc::new(b.finish()) as ArrayRef,
                Builder::I16(b) => Arc::new(b.finish()),
                Builder::I32(b) => Arc::new(b.finish()),
                Builder::I64(b) => Arc::new(b.finish()),
                Builder::U8(b) => Arc::new(b.finish()),
                Builder::U16(b) => Arc::new(b.finish()),
                Builder::U32(b) => Arc::new(b.finish()),
                Builder::U64(b) => Arc::new(b.finish()),
                Builder::Bool(b) => Arc::new(b.finish()),
                Builder::Str { builder, .. } => Arc::new(builder.finish()),
            })
            .collect();
        self.rows = 0;
        RecordBatch::try_new(self.schema.clone(), arrays).expect("builders follow the schema they were made from")
    }
}

fn array<const N: usize>(bytes: &[u8], o: usize) -> [u8; N] {
    bytes[o..o + N].try_into().expect("the record holds the field")
}

#[cfg(test)]
mod tests {
    use super::RowColumns;
    use crate::decode;
    use crate::fixture::physical;
    use ebq_front::plan::KernelOutput;

    /// Builders and the general path (values, then a batch) agree on every
    /// type a record holds: signed and unsigned widths, bools, strings with
    /// and without a NUL, and invalid UTF-8.
    #[test]
    fn builders_decode_exactly_what_the_value_path_decodes() {
        for sql in [
            "SELECT pid, tid, comm, fd, count, pos, fd > 3 AS big, cpu FROM syscalls.sys_enter_pread64",
            "SELECT prev_comm, prev_pid, prev_prio, prev_state, next_comm, uid FROM sched.sched_switch",
        ] {
            let p = physical(sql);
            let KernelOutput::Rows { record, .. } = &p.programs[0].output else { panic!("a row plan") };
            let schema = decode::schema(&p);
            let mut columns = RowColumns::new(&p, record, schema.clone()).expect("a plain row plan");
            let mut values = vec![];
            for seed in 0u8..40 {
                let mut bytes: Vec<u8> =
                    (0..record.size).map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed.wrapping_mul(11))).collect();
                if seed % 3 == 0 {
                    bytes.iter_mut().for_each(|b| *b |= 0x80); // no NUL, invalid UTF-8, negative numbers
                }
                columns.append(&bytes);
                values.push(decode::record_inputs(&p, record, &bytes));
            }
            assert_eq!(columns.finish(), decode::to_batch(&schema, &values), "{sql}");
            assert!(columns.is_empty());
        }
    }
}
