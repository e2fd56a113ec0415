//! Kernel inputs made by hand, for unit tests here and in `ebq-runtime`:
//! plans of SQL over the fixture kernel, and structs written at a plan's own
//! offsets, as a BPF program would write them.

use ebq_front::catalog::Catalog;
use ebq_front::plan::{plan, KernelOutput, PhysicalPlan, PlanOptions, StructField, StructLayout};

/// The physical plan of `sql` over the fixture catalog.
pub fn physical(sql: &str) -> PhysicalPlan {
    let cat = Catalog::fixture();
    let q = ebq_front::parse::parse_query(sql).unwrap();
    let l = ebq_front::bind::bind(&q, &cat).unwrap();
    plan(sql, &l, &cat, &PlanOptions::default()).unwrap()
}

/// The key and value layouts of an aggregate plan.
pub fn aggregate(p: &PhysicalPlan) -> (&StructLayout, &StructLayout) {
    match &p.programs[0].output {
        KernelOutput::Aggregate { key, value, .. } => (key, value),
        KernelOutput::Rows { .. } => panic!("an aggregate plan"),
    }
}

/// Writes `v` into `bytes` at field `f`, in the field's width.
pub fn put(bytes: &mut [u8], f: &StructField, v: u64) {
    let (o, n) = (f.offset as usize, f.ty.byte_size() as usize);
    bytes[o..o + n].copy_from_slice(&v.to_ne_bytes()[..n]);
}

/// A struct of `layout` with `values` (field index → value) set, the rest zero.
pub fn bytes_of(layout: &StructLayout, values: &[(usize, u64)]) -> Vec<u8> {
    let mut b = vec![0u8; layout.size as usize];
    values.iter().for_each(|&(i, v)| put(&mut b, &layout.fields[i], v));
    b
}
