//! A kernel fold's C (`plan::row_fold`): the row is built in a per-CPU slot
//! and handed to the caller's `ebq_fold` instead of a ring buffer.

use crate::plan::row_fold::column_macro;
use crate::plan::{RowFold, StructLayout};
use std::fmt::Write;

/// The per-CPU slot the row is built in.
pub const ROW_MAP: &str = "ebq_fold_row";

/// The slot map, the column macros and the caller's C (after `struct ebq_row`).
pub fn declarations(record: &StructLayout, fold: &RowFold) -> String {
    let mut c = format!(
        "/* Kernel fold ({}): each row is built in this CPU's slot and handed to ebq_fold, not to a ring. */\n\
         struct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\
         \t__type(value, struct ebq_row);\n}} {ROW_MAP} SEC(\".maps\");\n\n",
        fold.name
    );
    for f in &record.fields {
        if !f.name.starts_with("__") {
            let _ = writeln!(c, "#define {} {}", column_macro(&f.name), f.name);
        }
    }
    let _ = write!(
        c,
        "\n/* --- the fold's own C --- */\n{}\n/* --- end of the fold's C --- */\n\n",
        fold.source.trim_end()
    );
    c
}

/// Instead of reserving in a ring: this CPU's slot.
pub const ROW_SLOT: &str = "\t__u32 fold_slot = 0;\n\
     \tstruct ebq_row *r = bpf_map_lookup_elem(&ebq_fold_row, &fold_slot);\n\
     \tif (!r) {\n\t\tstats->dropped++;\t/* no slot: cannot happen for an array */\n\t\treturn 0;\n\t}\n";

/// Instead of submitting: the fold takes the row (or says it could not).
pub const HAND_OVER: &str =
    "\tif (ebq_fold(r))\n\t\tstats->dropped++;\t/* the fold could not take it (its map is full) */\n\treturn 0;\n}\n\n";

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::codegen::tests::generate_with;
    use crate::codegen::MapRole;
    use crate::plan::{plan, PlanOptions, RowFold};
    use std::sync::Arc;

    fn fold() -> Arc<RowFold> {
        Arc::new(RowFold {
            name: "test".into(),
            source: "static __always_inline int ebq_fold(struct ebq_row *r) { return r->EBQ_ROW_count == 0; }".into(),
            maps: vec!["ebq_fold_test".into()],
        })
    }

    #[test]
    fn a_folded_row_is_built_in_a_cpu_slot_and_handed_to_the_fold_not_a_ring() {
        let sql = "SELECT time, pid, count FROM syscalls.sys_enter_pread64";
        let options = PlanOptions { row_fold: Some(fold()), ..Default::default() };
        let c = generate_with(sql, &options);
        assert!(c.contains("#define EBQ_ROW_count c2_count"), "{c}");
        assert!(c.contains("struct ebq_row *r = bpf_map_lookup_elem(&ebq_fold_row, &fold_slot);"), "{c}");
        assert!(c.contains("if (ebq_fold(r))\n\t\tstats->dropped++;"), "{c}");
        assert!(!c.contains("bpf_ringbuf"), "{c}");
        // The fold's C comes after the struct and the macros it names.
        assert!(c.find("struct ebq_row {") < c.find("#define EBQ_ROW_time"), "{c}");
        assert!(c.find("#define EBQ_ROW_count") < c.find("static __always_inline int ebq_fold"), "{c}");

        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let p = plan(sql, &l, &cat, &options).unwrap();
        let program = crate::codegen::generate(&p).remove(0);
        let fold_maps: Vec<&str> = program.maps.iter().filter(|m| m.role == MapRole::Fold).map(|m| &*m.name).collect();
        assert_eq!(fold_maps, ["ebq_fold_test"]);
        assert!(program.map(MapRole::FoldRow).is_some() && program.map(MapRole::Rows).is_none());
        assert!(program.row_rings.is_none());
        assert!(p.explain().contains("[kernel] Fold       "), "{}", p.explain());
    }

    #[test]
    fn a_fold_refuses_what_needs_rows_in_user_space() {
        let cat = Catalog::fixture();
        let options = PlanOptions { row_fold: Some(fold()), ..Default::default() };
        for sql in [
            "SELECT time, count FROM syscalls.sys_enter_pread64 ORDER BY count",
            "SELECT time, count FROM syscalls.sys_enter_pread64 LIMIT 3",
        ] {
            let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
            let e = plan(sql, &l, &cat, &options).unwrap_err().render(sql);
            assert!(e.contains("a kernel fold takes every row in the kernel"), "{e}");
        }
    }
}
