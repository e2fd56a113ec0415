//! Unit tests of exec's operators on hand-made inputs: plans come from SQL
//! over the checked-in tracepoint formats, map values and records are bytes
//! written at the plan's own offsets, and every expected value is exact.

mod groups;
mod joins;
mod rows;

use crate::catalog::Catalog;
use crate::plan::{plan, KernelOutput, PhysicalPlan, PlanOptions, StructField, StructLayout};

/// The physical plan of `sql` over the fixture catalog.
pub(crate) fn physical(sql: &str) -> PhysicalPlan {
    let cat = Catalog::fixture();
    let q = crate::parse::parse_query(sql).unwrap();
    let l = crate::bind::bind(&q, &cat).unwrap();
    plan(sql, &l, &cat, &PlanOptions::default()).unwrap()
}

pub(crate) fn aggregate(p: &PhysicalPlan) -> (&StructLayout, &StructLayout) {
    match &p.programs[0].output {
        KernelOutput::Aggregate { key, value, .. } => (key, value),
        KernelOutput::Rows { .. } => panic!("an aggregate plan"),
    }
}

/// Writes `v` into `bytes` at field `f`, in the field's width.
pub(crate) fn put(bytes: &mut [u8], f: &StructField, v: u64) {
    let (o, n) = (f.offset as usize, f.ty.byte_size() as usize);
    bytes[o..o + n].copy_from_slice(&v.to_ne_bytes()[..n]);
}

/// A struct of `layout` with `values` (field index → value) set, the rest zero.
pub(crate) fn bytes_of(layout: &StructLayout, values: &[(usize, u64)]) -> Vec<u8> {
    let mut b = vec![0u8; layout.size as usize];
    values.iter().for_each(|&(i, v)| put(&mut b, &layout.fields[i], v));
    b
}
