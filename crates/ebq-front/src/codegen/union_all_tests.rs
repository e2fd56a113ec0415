//! A top-level union: one program per branch in one object, each with its own
//! event, filter and expressions, all writing the one group map (or ring).
//! Parse, bind, plan, EXPLAIN and C against the fixture kernel;
//! `crates/ebq-e2e/tests/union_all.rs` runs them on the real one.

use super::tests::generate_for;
use crate::bind::{ColumnSource, QueryBody, ScalarExpr};
use crate::catalog::Catalog;
use crate::plan::{plan, KernelOutput, PlanOptions};
use crate::types::DataType;

/// read() entries (raw under `--attach auto`) and read() exits (classic), one
/// label each, grouped by the label; the exits' `v` is a literal, typed as the
/// entries' `count`.
const ENTER_EXIT: &str = "SELECT k, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top, P50(v) AS med, \
    COUNT(DISTINCT v) AS vals \
    FROM (SELECT 0 AS k, count AS v FROM syscalls.sys_enter_read WHERE fd > 2 \
          UNION ALL SELECT 1 AS k, 7 AS v FROM syscalls.sys_exit_read WHERE ret > 0) u \
    WHERE pid > 1 GROUP BY k";

#[test]
fn parse_keeps_each_branchs_named_expressions() {
    let q = crate::parse::parse_query(ENTER_EXIT).unwrap();
    assert_eq!(q.union.len(), 2);
    let names: Vec<&str> = q.union[1].columns.iter().map(|c| c.value.as_str()).collect();
    assert_eq!(names, ["k", "v"]);
    assert_eq!(q.union[1].exprs[1].to_string(), "7");
    assert_eq!(q.from.alias.as_deref(), Some("u"));
}

#[test]
fn bind_reads_union_columns_and_types_literals_by_their_column() {
    let cat = Catalog::fixture();
    let l = crate::bind::bind(&crate::parse::parse_query(ENTER_EXIT).unwrap(), &cat).unwrap();
    assert_eq!(l.union.len(), 2);
    let QueryBody::Aggregate { keys, .. } = &l.body else { panic!("{l:?}") };
    assert_eq!(
        keys[0],
        ScalarExpr::Column { source: ColumnSource::Union { name: "k".into(), index: 0 }, ty: DataType::U64 }
    );
    assert_eq!(l.union[1].columns[1], ScalarExpr::Int { value: 7, ty: DataType::U64 }, "typed as count");
    assert_eq!(l.union[0].filter.as_ref().unwrap().to_string(), "fd > 2");
    assert_eq!(l.union[1].filter.as_ref().unwrap().to_string(), "ret > 0");
}

#[test]
fn plan_gives_each_branch_a_program_over_one_layout() {
    let sql = "SELECT k, COUNT(*) AS n, SUM(v) AS total FROM (SELECT 0 AS k, count AS v FROM syscalls.sys_enter_read \
               WHERE fd > 2 UNION ALL SELECT 1 AS k, count AS v FROM syscalls.sys_enter_write) u WHERE pid > 1 GROUP BY k";
    let cat = Catalog::fixture();
    let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
    let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
    assert_eq!(p.programs.len(), 1, "one object");
    let k = &p.programs[0];
    assert_eq!(k.branches.len(), 1);
    let b = &k.branches[0];
    // Own WHERE and the outer WHERE, each over the branch's own columns.
    assert_eq!(k.filter.as_ref().unwrap().to_string(), "(fd > 2) && (pid > 1)");
    assert_eq!(b.filter.as_ref().unwrap().to_string(), "pid > 1");
    let (
        KernelOutput::Aggregate { key: k1, key_fields: f1, value: v1, .. },
        KernelOutput::Aggregate { key: k2, key_fields: f2, value: v2, .. },
    ) = (&k.output, &b.output)
    else {
        panic!("{p:?}")
    };
    assert_eq!((k1, v1), (k2, v2), "the same map layout");
    assert_eq!((f1[0].0.to_string(), f2[0].0.to_string()), ("0".into(), "1".into()));
    // Both are system-call entries: each goes through the attachment decision (raw under auto).
    assert!(k.attach_notes[0].contains("sys_enter_read: raw sys_enter"), "{:?}", k.attach_notes);
    assert!(b.attach_notes[0].contains("sys_enter_write: raw sys_enter"), "{:?}", b.attach_notes);
}

#[test]
fn codegen_writes_one_program_per_branch_into_the_one_group_map() {
    let c = generate_for(ENTER_EXIT);
    assert!(c.contains("SEC(\"tp_btf/sys_enter\")\nint ebq_query(__u64 *ctx)"), "{c}");
    assert!(c.contains("SEC(\"tracepoint/syscalls/sys_exit_read\")\nint ebq_query_1(struct ebq_event_1 *ctx)"), "{c}");
    assert!(c.contains("struct ebq_event_1 {"), "{c}");
    assert_eq!(c.matches(" ebq_groups SEC(\".maps\")").count(), 1, "{c}");
    assert_eq!(c.matches(" ebq_sketch SEC(\".maps\")").count(), 1, "{c}");
    assert_eq!(c.matches("struct ebq_value *v = bpf_map_lookup_elem(&ebq_groups, &key);").count(), 2, "{c}");
    assert_eq!(c.matches("/* WHERE (fd > 2) && (pid > 1) */").count(), 1, "{c}");
    assert_eq!(c.matches("/* WHERE (ret > 0) && (pid > 1) */").count(), 1, "{c}");
    assert!(c.contains("/* SUM(count) */") && c.contains("/* SUM(7) */"), "{c}");
}

#[test]
fn a_row_union_writes_one_ring_from_every_branch() {
    let c = generate_for(
        "SELECT v, comm FROM (SELECT count AS v FROM syscalls.sys_enter_read \
         UNION ALL SELECT count AS v FROM syscalls.sys_enter_write) u",
    );
    assert_eq!(c.matches(" ebq_rows SEC(\".maps\")").count(), 1, "{c}");
    // Every branch reserves in its CPU's ring of the one ring-of-rings map.
    assert_eq!(c.matches("void *ring = bpf_map_lookup_elem(&ebq_rows, &ring_cpu);").count(), 2, "{c}");
    assert_eq!(c.matches("bpf_ringbuf_reserve(ring, sizeof(*r), 0)").count(), 2, "{c}");
    assert!(c.contains("int ebq_query(") && c.contains("int ebq_query_1("), "{c}");
}

#[test]
fn explain_lists_every_program_and_the_shared_map() {
    let engine = crate::Engine::with_kernel(crate::host::FixtureKernel::checked_in());
    let plan = engine.prepare(ENTER_EXIT).unwrap().explain();
    let at = |text: &str| plan.find(text).unwrap_or_else(|| panic!("no `{text}` in {plan}"));
    let union =
        at("[kernel] Union      2 branches, one program each in one object, all writing the one group map ebq_groups");
    let first = at(
        "[kernel] Attach     branch 1: tracepoint:syscalls:sys_enter_read (BPF_PROG_TYPE_TRACING, tp_btf, ebq_query)",
    );
    let second =
        at("[kernel] Attach     branch 2: tracepoint:syscalls:sys_exit_read (BPF_PROG_TYPE_TRACEPOINT, ebq_query_1)");
    let map = at("[kernel] Aggregate  keys=[c0_k, c1_v (hidden, for COUNT(DISTINCT))]");
    assert!(union < first && first < second && second < map, "{plan}");
    assert!(
        plan.contains("[kernel] Compute    key.c0_k = 1, key.c1_v = 7, sum_0 ← 7, max_1 ← 7, sketch 0 ← 7"),
        "{plan}"
    );
}

/// Issue 40 item 6: a union's string column is NULL-marked in every branch's
/// layout when one branch reads a user string there (the second, here), and
/// the branch whose string is never NULL clears the mark of an empty string
/// in its ring record, past whose NUL the ring holds stale bytes.
#[test]
fn a_union_string_is_null_marked_when_any_branch_reads_it_through_a_pointer() {
    let sql = "SELECT name FROM (SELECT '' AS name FROM syscalls.sys_exit_openat \
               UNION ALL SELECT filename AS name FROM syscalls.sys_enter_openat) u";
    let cat = Catalog::fixture();
    let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
    let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
    let k = &p.programs[0];
    for b in k.with_branches() {
        let KernelOutput::Rows { record, .. } = &b.output else { panic!("{p:?}") };
        let marked: Vec<&str> = record.fields.iter().filter(|f| f.null_marked).map(|f| f.name.as_str()).collect();
        assert_eq!(marked, ["c0_name"], "branch {}", b.union_branch);
    }
    let c = generate_for(sql);
    assert_eq!(c.matches("\tif (!r->c0_name[0])\n\t\tr->c0_name[1] = 0;\n").count(), 1, "the '' branch: {c}");
    assert_eq!(c.matches("\tebq_user_str_read(r->c0_name, bpf_probe_read_user_str(").count(), 1, "{c}");
}
