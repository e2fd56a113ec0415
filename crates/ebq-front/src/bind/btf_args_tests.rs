//! Raw tracepoint arguments bound against the fixture kernel's BTF
//! (`tests/fixtures/btf/kernel.c`): types, aliases, the record-or-arguments rule,
//! and errors with their exact spans, as the CLI renders them.

use super::super::{EventSource, LogicalPlan};
use crate::catalog::Catalog;
use crate::types::DataType;

fn bind(sql: &str) -> crate::Result<LogicalPlan> {
    super::super::bind(&crate::parse::parse_query(sql)?, &Catalog::fixture())
}

fn rendered(sql: &str) -> String {
    match bind(sql) {
        Err(e) => e.render(sql),
        Ok(_) => panic!("{sql}: bound"),
    }
}

/// The caret line under columns `from..to` (1-based, end exclusive).
fn carets(from: usize, to: usize) -> String {
    format!("{}{}", " ".repeat(4 + from - 1), "^".repeat(to - from))
}

#[test]
fn arguments_and_member_paths_keep_their_c_types() {
    let plan = bind(
        "SELECT rq, nr_bytes, rq.__data_len, rq.q.disk.disk_name, rq.q.disk.major, rq.op, rq.timed_out, \
         rq.deadline, rq.queuelist.next, rq.llist_pad FROM block.block_rq_complete",
    )
    .unwrap();
    let types: Vec<DataType> = plan.schema().into_iter().map(|(_, t)| t).collect();
    let int = |bits, signed| DataType::Int { bits, signed };
    assert_eq!(
        types,
        [
            DataType::U64,             // struct request *: the address
            DataType::U32,             // unsigned int
            DataType::U32,             // unsigned int
            DataType::Str { cap: 32 }, // char[32]
            int(32, true),             // int
            int(32, false),            // enum req_op (clang 14 marks no enum signed)
            int(8, false),             // bool
            int(64, true),             // const volatile long
            DataType::U64,             // a pointer inside an anonymous union
            int(8, true),              // signed char inside an anonymous struct
        ]
    );
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
}

#[test]
fn format_fields_win_over_arguments_of_the_same_name() {
    // block_rq_complete's record has `int error`; its raw `blk_status_t error` is shadowed.
    let plan = bind("SELECT error, sector FROM block.block_rq_complete").unwrap();
    assert_eq!(plan.schema()[0].1, DataType::Int { bits: 32, signed: true });
    assert_eq!(plan.event.source, EventSource::Tracepoint, "only record fields: the classic tracepoint");
}

#[test]
fn aliases_resolve_before_arguments() {
    let plan = bind("SELECT c.rq.q.disk.disk_name, c.nr_bytes FROM block.block_rq_complete c").unwrap();
    assert_eq!(plan.schema()[0], ("c.rq.q.disk.disk_name".to_string(), DataType::Str { cap: 32 }));
    // An alias named like the argument is the alias.
    let plan = bind("SELECT rq.rq.__data_len FROM block.block_rq_complete rq").unwrap();
    assert_eq!(plan.schema()[0].1, DataType::U32);
}

#[test]
fn a_join_pairs_on_the_request_pointer_with_both_ends_on_tp_btf() {
    let plan = bind(
        "SELECT c.rq.q.disk.disk_name, COUNT(*), SUM(i.rq.__data_len), MAX(c.time - i.time) \
         FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq GROUP BY c.rq.q.disk.disk_name",
    )
    .unwrap();
    let join = plan.join.as_ref().unwrap();
    assert_eq!((&join.start.source, &plan.event.source), (&EventSource::TracepointBtf, &EventSource::TracepointBtf));
    assert_eq!(join.keys[0].2, DataType::U64);
    // Each side chooses alone: the start reads its record, the end its raw arguments.
    let plan = bind(
        "SELECT i.comm, COUNT(*) FROM block.block_rq_issue i JOIN block.block_rq_complete c \
         ON i.sector = c.rq.__sector WHERE c.nr_bytes > 0 GROUP BY i.comm",
    )
    .unwrap();
    assert_eq!(plan.join.unwrap().start.source, EventSource::Tracepoint);
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
}

#[test]
fn a_misspelt_member_points_at_itself_and_lists_the_members() {
    let sql = "SELECT COUNT(*) FROM block.block_rq_complete GROUP BY rq.q.dsk.disk_name";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `struct request_queue` has no member `dsk` at 1:60\n1 | {sql}\n{}\n  \
             help: did you mean `disk`? members: queuedata, disk, queue_flags; \
             `ebq describe tracepoint:block:block_rq_complete rq.q` lists its members",
            carets(60, 63)
        )
    );
}

#[test]
fn a_struct_by_value_is_refused_at_its_member() {
    let sql = "SELECT c.rq.lh FROM block.block_rq_complete c";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `struct list_head` cannot be a column: it is a struct by value; name one of its members at 1:13\n\
             1 | {sql}\n{}\n  \
             help: `ebq describe tracepoint:block:block_rq_complete rq.lh` lists its members",
            carets(13, 15)
        )
    );
    let sql = "SELECT nr_bytes.x FROM block.block_rq_complete";
    assert!(rendered(sql).starts_with(
        "error: cannot read member `x` of `unsigned int`: it is not a struct or a pointer to one at 1:17\n"
    ));
}

#[test]
fn a_qualified_name_that_is_no_argument_lists_the_arguments() {
    let sql = "SELECT c.req.q FROM block.block_rq_complete c";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `req` is not a raw argument of tracepoint:block:block_rq_complete at 1:10\n1 | {sql}\n{}\n  \
             help: its raw arguments: rq, error, nr_bytes",
            carets(10, 13)
        )
    );
}

#[test]
fn one_event_reads_its_record_or_its_arguments() {
    let sql = "SELECT sector, rq.__data_len FROM block.block_rq_complete";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `rq.__data_len` is a raw argument of tracepoint:block:block_rq_complete, read by a tp_btf \
             program, and `sector` a field of its format record, which only the classic tracepoint program sees; \
             one event's columns come from one or the other at 1:16\n1 | {sql}\n{}\n  \
             help: read the value through the raw arguments instead of `sector`, or drop `rq.__data_len` \
             (`ebq describe tracepoint:block:block_rq_complete` lists both); system columns (comm, pid, tid, …) \
             stay available, and a record field named like one (`comm`) means the system column in a tp_btf program",
            carets(16, 29)
        )
    );
    // SELECT * reads the record.
    assert!(bind("SELECT *, rq FROM block.block_rq_complete").is_err());
}

#[test]
fn misspelt_arguments_are_suggested() {
    let Err(crate::Error::Query(q)) = bind("SELECT nr_byte FROM block.block_rq_complete") else { panic!() };
    assert_eq!(q.help.as_deref(), Some("did you mean `nr_bytes`?"));
}

#[test]
fn a_path_starts_at_the_raw_argument_even_where_a_field_has_its_name() {
    // io_uring_submit_req's record has `void *req`; `req.…` can only mean the raw `struct io_kiocb *req`.
    let plan = bind(
        "SELECT req.file.f_inode.i_ino, req.cqe.fd, req.opcode, COUNT(*) FROM io_uring.io_uring_submit_req \
         GROUP BY req.file.f_inode.i_ino, req.cqe.fd, req.opcode",
    )
    .unwrap();
    let types: Vec<DataType> = plan.schema().into_iter().map(|(_, t)| t).collect();
    let int = |bits, signed| DataType::Int { bits, signed };
    assert_eq!(types, [DataType::U64, int(32, true), int(8, false), DataType::U64]);
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
    // Bare, `req` is the record's field.
    assert_eq!(bind("SELECT req FROM io_uring.io_uring_submit_req").unwrap().event.source, EventSource::Tracepoint);
}

/// The first column of `plan`'s SELECT list, as bound.
fn first_column(plan: &LogicalPlan) -> super::super::ColumnSource {
    let mut found = vec![];
    let exprs: Vec<&crate::bind::ScalarExpr> = match &plan.body {
        crate::bind::QueryBody::Aggregate { keys, .. } => keys.iter().collect(),
        crate::bind::QueryBody::Rows { columns } => columns.iter().map(|c| &c.source).collect(),
    };
    exprs[0].visit_columns(&mut |c| found.push(c.clone()));
    found.remove(0)
}

#[test]
fn with_raw_arguments_a_record_field_named_like_a_system_column_is_the_system_column() {
    use super::super::ColumnSource;
    use crate::catalog::SystemColumn;
    // block_rq_issue's record copies current->comm into `comm`; a tp_btf program has no record,
    // so there `comm` is bpf_get_current_comm(): the same value.
    let plan =
        bind("SELECT comm, rq.q.disk.disk_name, COUNT(*) FROM block.block_rq_issue GROUP BY comm, rq.q.disk.disk_name")
            .unwrap();
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
    assert_eq!(first_column(&plan), ColumnSource::System(SystemColumn::Comm));
    // Without raw arguments it stays the record's field, on the classic tracepoint.
    let plan = bind("SELECT comm, COUNT(*) FROM block.block_rq_issue GROUP BY comm").unwrap();
    assert_eq!(plan.event.source, EventSource::Tracepoint);
    assert!(matches!(first_column(&plan), ColumnSource::Field { ref name, .. } if name == "comm"));
    // In a JOIN each side decides: the start reads rq (tp_btf), so its comm is the system column.
    let plan = bind(
        "SELECT i.comm, COUNT(*) FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq \
         GROUP BY i.comm",
    )
    .unwrap();
    let join = plan.join.as_ref().unwrap();
    assert_eq!(
        (join.start.source.clone(), plan.event.source.clone()),
        (EventSource::TracepointBtf, EventSource::TracepointBtf)
    );
    assert!(
        matches!(first_column(&plan), ColumnSource::Start { ref column, .. } if **column == ColumnSource::System(SystemColumn::Comm)),
        "{:?}",
        first_column(&plan)
    );
}

#[test]
fn a_record_only_field_beside_raw_arguments_is_still_an_error_after_comm_falls_back() {
    let sql = "SELECT comm, rwbs, rq.__data_len FROM block.block_rq_issue";
    let Err(crate::Error::Query(q)) = bind(sql) else { panic!("{sql}: bound") };
    assert!(q.message.contains("and `rwbs` a field of its format record"), "{}", q.message);
    assert!(q.help.as_deref().unwrap_or_default().contains("means the system column in a tp_btf program"), "{q:?}");
}

#[test]
fn the_shipped_biosnoop_summary_reads_comm_and_the_disk_name_through_tp_btf() {
    // The fixture's BTF has no enum req_flag_bits for req_flags() (tests/shipped.rs binds it on this kernel).
    let sql =
        include_str!("../../../../queries/biosnoop-summary.sql").replace("req_flags(c.rq.cmd_flags)", "c.rq.cmd_flags");
    let sql = sql.as_str();
    let plan = bind(sql).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let names: Vec<String> = plan.schema().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["comm", "pid", "disk", "flags", "requests", "bytes", "avg_us", "max_us"]);
    assert_eq!(plan.join.as_ref().unwrap().start.source, EventSource::TracepointBtf);
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
}

#[test]
fn io_uring_completions_read_the_request_their_void_pointer_is() {
    // The kernel declares io_uring_complete's `req` as `void *`; it is the completed
    // `struct io_kiocb *`, whose file is assigned by then (fds and registered files).
    let plan = bind(
        "SELECT req.opcode, req.file.f_inode.i_ino, cqe.res, COUNT(*) FROM io_uring.io_uring_complete \
         GROUP BY req.opcode, req.file.f_inode.i_ino, cqe.res",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let types: Vec<DataType> = plan.schema().into_iter().map(|(_, t)| t).collect();
    let int = |bits, signed| DataType::Int { bits, signed };
    assert_eq!(types, [int(8, false), DataType::U64, int(32, true), DataType::U64]);
    assert_eq!(plan.event.source, EventSource::TracepointBtf);
}
