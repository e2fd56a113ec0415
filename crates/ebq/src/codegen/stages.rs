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
    let KernelOutput::Rows { record, fields, .. } = output else { unreachable!("stage limits apply to row queries") };
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
    c.push_str(
        "\tstruct ebq_row *r = bpf_ringbuf_reserve(&ebq_rows, sizeof(*r), 0);\n\tif (!r) {\n\
         \t\tstats->dropped++;\t/* ring buffer full */\n\t\treturn 0;\n\t}\n",
    );
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
