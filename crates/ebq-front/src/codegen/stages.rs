//! Row programs cut short after a pipeline stage (`ebq bench stages`, see
//! [`StageLimit`]): the same code as the full program, up to that stage.

use super::{assign, columns_of, ColumnSource};
use crate::plan::{KernelOutput, StageLimit};
use crate::types::DataType;

/// The whole body of a program limited to the trigger stage.
pub const TRIGGER_ONLY: &str = "{\n\t/* ebq bench: trigger stage only */\n\treturn 0;\n}\n\n";

/// The rest of a row program after WHERE, ending after stage `limit`.
/// `load` declares one column's local, as the full program does.
pub fn rows_tail(
    output: &KernelOutput,
    limit: StageLimit,
    skip: &[ColumnSource],
    load: &dyn Fn(&ColumnSource, DataType) -> String,
) -> String {
    let KernelOutput::Rows { record, fields, per_cpu_rings, .. } = output else {
        unreachable!("stage limits apply to row queries")
    };
    let mut c = format!("\t/* ebq bench: stages up to {} */\n", limit.name());
    if limit == StageLimit::Filter {
        return c + "\treturn 0;\n}\n\n";
    }
    let build = limit >= StageLimit::Build;
    if build {
        for (col, ty) in columns_of(fields.iter().map(|(e, _)| e), skip) {
            c.push_str(&load(&col, ty));
        }
    }
    c.push_str(&super::rings::reserve(*per_cpu_rings));
    if build {
        for (e, field) in fields {
            c.push_str(&assign("r->", &record.fields[*field].name, e));
        }
    }
    if limit == StageLimit::Commit {
        c.push_str("\tbpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);\n\treturn 0;\n}\n\n");
    } else {
        c.push_str("\tbpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);\n\treturn 0;\n}\n\n");
    }
    c
}

#[cfg(test)]
mod tests {
    use crate::codegen::tests::generate_with;
    use crate::plan::{PlanOptions, StageLimit};

    fn generate(sql: &str, limit: Option<StageLimit>) -> String {
        generate_with(sql, &PlanOptions { stage_limit: limit, ..Default::default() })
    }

    /// Each stage adds exactly its own code to the program (that every cut
    /// compiles is checked in `tests/compile.rs`).
    #[test]
    fn each_stage_adds_its_code() {
        let sql = "SELECT time, pid, count FROM syscalls.sys_enter_pread64 WHERE comm = 'fio'";
        let full = generate(sql, None);
        let body = |c: &str| c[c.find("int ebq_query(").unwrap()..c.find("int ebq_follow_fork(").unwrap()].to_string();
        let has = |c: &str| {
            let b = body(c);
            [
                b.contains("WHERE"),
                b.contains("bpf_ringbuf_reserve"),
                b.contains("r->c2_count = ev_count;"),
                b.contains("bpf_ringbuf_submit"),
                b.contains("ebq_wakeup_flag("),
            ]
        };
        assert_eq!(has(&full), [true; 5]);
        let expected = [
            (StageLimit::Trigger, [false, false, false, false, false]),
            (StageLimit::Filter, [true, false, false, false, false]),
            (StageLimit::Reserve, [true, true, false, false, false]),
            (StageLimit::Build, [true, true, true, false, false]),
            (StageLimit::Commit, [true, true, true, true, false]),
        ];
        for (limit, want) in expected {
            let c = generate(sql, Some(limit));
            assert_eq!(has(&c), want, "{limit:?}:\n{}", body(&c));
        }
    }
}
