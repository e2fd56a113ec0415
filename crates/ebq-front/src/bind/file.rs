//! Binding the derived file columns (`inode`, `fs_type`, `mount_point`, …).
//!
//! They resolve only at events whose fd names a file of the current task (see
//! [`crate::catalog::file_columns::fd_field`]); anywhere else, and on kernels
//! without BTF, naming one is a positioned bind error that says why. In a
//! JOIN they belong to whichever side has the fd, like any column. At the
//! two-fd calls they come in two sets, `in_…` and `out_…` (one per end).

use super::{ColumnSource, ScalarExpr};
use crate::catalog::file_columns::{
    address_field, columns_at, fd_at, fd_fields, is_fault_event, is_finish_event, is_map_pages_event, request_field,
    FdEnd, FAULT_EVENT, FINISH_EVENT, MAP_PAGES_EVENT, WHICH_EVENTS,
};
use crate::catalog::{FileColumn, TracepointFormat};
use crate::error::{Error, QueryError, Span, Stage};
use crate::host::KernelInfo;
use crate::parse::Expr;

/// The file column `name` of an event with `format`, when it has file
/// columns and `kernel` has BTF.
pub(super) fn file_lookup(kernel: &dyn KernelInfo, format: &TracepointFormat, name: &str) -> Option<ScalarExpr> {
    let (column, end) = FileColumn::parse(name)?;
    let fd = fd_at(format, end)?;
    if kernel.btf_problem().is_some() || !columns_at(format).contains(&column) {
        return None;
    }
    Some(ScalarExpr::Column { source: ColumnSource::File { column, fd: fd.to_string() }, ty: column.data_type() })
}

/// Names of the file columns an event has, for suggestions.
pub(super) fn file_column_names(format: &TracepointFormat) -> Vec<&'static str> {
    let columns = columns_at(format);
    fd_fields(format).into_iter().flat_map(|(end, _)| columns.iter().map(move |c| c.name_at(end))).collect()
}

/// The events a file column is resolved at: each one's format and its name as written.
type Events<'a> = [(&'a TracepointFormat, String)];

/// Why the file column `name` is not available at any of `events` (format,
/// name as written); `None` if `name` is not a file column, or one event has it.
pub(super) fn file_column_error(kernel: &dyn KernelInfo, name: &str, e: &Expr, events: &Events<'_>) -> Option<Error> {
    let (column, end) = FileColumn::parse(name)?;
    let span = super::expr::span_of(e);
    let error = no_position(name, column, events, span)
        .or_else(|| not_this_kind(name, column, events, span))
        .or_else(|| no_fd(kernel, name, (column, end), events, span))?;
    Some(Error::Query(error))
}

/// The events' names, joined with "or", for messages.
fn event_names(events: &Events<'_>) -> String {
    events.iter().map(|(_, n)| n.as_str()).collect::<Vec<_>>().join(" or ")
}

/// `file_pos` where the file is not an fd's: a mapped address's or an io_uring request's.
fn no_position(name: &str, column: FileColumn, events: &Events<'_>, span: Option<Span>) -> Option<QueryError> {
    if column != FileColumn::FilePos {
        return None;
    }
    if let Some((format, event)) = events.iter().find(|(f, _)| address_field(f).is_some()) {
        let address = address_field(format).expect("checked");
        return Some(QueryError::new(
            Stage::Bind,
            format!(
                "`{name}` is an fd's position; at {event} the file is the one mapped at `{address}`, which has none"
            ),
            span,
        ));
    }
    let (_, event) = events.iter().find(|(f, _)| request_field(f).is_some())?;
    Some(QueryError::new(
        Stage::Bind,
        format!(
            "`{name}` is an fd's position; at {event} the file is the io_uring request's, and the request \
             carries its own offset"
        ),
        span,
    ))
}

/// A column only some kinds of event have (io_uring requests, filemap faults,
/// fault-arounds and fault finishes, mapped addresses), at events of none of them.
fn not_this_kind(name: &str, column: FileColumn, events: &Events<'_>, span: Option<Span>) -> Option<QueryError> {
    let names = event_names(events);
    if FileColumn::REQUEST.contains(&column) && !events.iter().any(|(f, _)| request_field(f).is_some()) {
        return Some(
            QueryError::new(
                Stage::Bind,
                format!("`{name}` is an io_uring request's, and {names} has no request"),
                span,
            )
            .with_help(
                "request columns exist at io_uring events with a `req` (io_uring_submit_req, io_uring_complete, …)",
            ),
        );
    }
    if FileColumn::FAULT.contains(&column) && !events.iter().any(|(f, _)| is_fault_event(f)) {
        let (category, event) = FAULT_EVENT;
        return Some(QueryError::new(
            Stage::Bind,
            format!("`{name}` is a filemap fault's (at {category}.{event}), and {names} is not one"),
            span,
        ));
    }
    let around = FileColumn::MAP_PAGES.contains(&column) && events.iter().any(|(f, _)| is_map_pages_event(f));
    if (FileColumn::MAP_PAGES.contains(&column) || FileColumn::FINISH.contains(&column))
        && !around
        && !events.iter().any(|(f, _)| is_finish_event(f))
    {
        let (category, event) = MAP_PAGES_EVENT;
        let (fc, fe) = FINISH_EVENT;
        let finish = format!("a filemap fault's finish ({fc}.{fe})");
        let message = if FileColumn::MAP_PAGES.contains(&column) {
            format!("`{name}` is known at a fault-around ({category}.{event}) or {finish}, and {names} is neither")
        } else {
            format!("`{name}` is known at {finish}, and {names} is not one")
        };
        return Some(QueryError::new(Stage::Bind, message, span));
    }
    if FileColumn::MAPPED.contains(&column) && !events.iter().any(|(f, _)| address_field(f).is_some()) {
        return Some(QueryError::new(
            Stage::Bind,
            format!(
                "`{name}` is the file offset a user address maps (at syscalls.sys_enter_msync and \
                 exceptions.page_fault_user), and {names} has no such address"
            ),
            span,
        ));
    }
    None
}

/// No event has the fd the column is resolved from (or, at a two-fd call,
/// the column does not say which end), or the kernel has no BTF to resolve it.
fn no_fd(
    kernel: &dyn KernelInfo,
    name: &str,
    (column, end): (FileColumn, FdEnd),
    events: &Events<'_>,
    span: Option<Span>,
) -> Option<QueryError> {
    let with_fd = events.iter().any(|(f, _)| fd_at(f, end).is_some());
    let two_fds = events.iter().find(|(f, _)| end == FdEnd::Only && fd_at(f, FdEnd::In).is_some());
    Some(match (with_fd, kernel.btf_problem()) {
        (false, _) if two_fds.is_some() => {
            let (_, event) = two_fds.expect("checked");
            QueryError::new(
                Stage::Bind,
                format!(
                    "`{name}`: {event} has two fds; say which file: `{}` or `{}`",
                    column.name_at(FdEnd::In),
                    column.name_at(FdEnd::Out)
                ),
                span,
            )
            .with_help(WHICH_EVENTS)
        }
        (false, _) => QueryError::new(
            Stage::Bind,
            format!("`{name}` is a file column, and {} has no fd argument to resolve", event_names(events)),
            span,
        )
        .with_help(WHICH_EVENTS),
        (true, Some(problem)) => QueryError::new(Stage::Bind, format!("`{name}`: {problem}"), span)
            .with_help("use a kernel with BTF (/sys/kernel/btf/vmlinux), or point EBQ_KERNEL_BTF at its BTF file"),
        (true, None) => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::error::Error;

    fn bind(sql: &str) -> crate::Result<crate::bind::LogicalPlan> {
        let cat = Catalog::fixture();
        crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat)
    }

    #[test]
    fn file_columns_need_an_fd() {
        let Err(Error::Query(q)) = bind("SELECT COUNT(*) FROM syscalls.sys_enter_openat GROUP BY fs_type") else {
            panic!("sys_enter_openat has no fd (only dfd)");
        };
        assert!(q.message.contains("`fs_type` is a file column"), "{}", q.message);
        assert!(q.help.unwrap().contains("sys_exit_openat"));
        let span = q.span.expect("positioned");
        assert_eq!((span.start.column, span.end.column), (57, 64));
        for sql in
            ["SELECT inode FROM sched.sched_process_fork", "SELECT fd FROM block.block_rq_issue WHERE file_name = 'x'"]
        {
            assert!(bind(sql).is_err(), "{sql}");
        }
    }

    #[test]
    fn file_columns_bind_at_fd_events_and_open_exits() {
        for sql in [
            "SELECT inode, dev, fs_type, mount_point, file_name, file_pos FROM syscalls.sys_enter_pread64",
            "SELECT file_name FROM syscalls.sys_exit_openat WHERE ret >= 0",
            "SELECT fs_type, COUNT(*) FROM syscalls.sys_enter_write GROUP BY fs_type",
        ] {
            bind(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
        // sys_exit_pread64 returns a byte count, not an fd.
        assert!(bind("SELECT inode FROM syscalls.sys_exit_pread64").is_err());
    }

    /// msync and user page faults: the file mapped at the address, which has no position.
    #[test]
    fn file_columns_bind_at_a_mapped_address() {
        for (event, address) in [("syscalls.sys_enter_msync", "start"), ("exceptions.page_fault_user", "address")] {
            let sql =
                format!("SELECT file_name, inode, fs_type, COUNT(*) FROM {event} GROUP BY file_name, inode, fs_type");
            let plan = bind(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let crate::bind::QueryBody::Aggregate { keys, .. } = &plan.body else { panic!("an aggregate") };
            let crate::bind::ScalarExpr::Column { source: crate::bind::ColumnSource::File { fd, .. }, .. } = &keys[0]
            else {
                panic!("{keys:?}")
            };
            assert_eq!(fd, address);
            let Err(Error::Query(q)) = bind(&format!("SELECT file_pos FROM {event}")) else {
                panic!("{event}: file_pos")
            };
            assert!(q.message.contains("the one mapped at"), "{}", q.message);
            assert_eq!(q.span.expect("positioned").start.column, 8);
        }
    }

    #[test]
    fn two_fd_calls_have_in_and_out_columns() {
        for (event, fd_in, fd_out) in [
            ("sys_enter_copy_file_range", "fd_in", "fd_out"),
            ("sys_enter_sendfile64", "in_fd", "out_fd"),
            ("sys_enter_splice", "fd_in", "fd_out"),
        ] {
            let sql = format!("SELECT in_inode, out_inode, in_file_name, out_fs_type FROM syscalls.{event}");
            let plan = bind(&sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            let crate::bind::QueryBody::Rows { columns } = &plan.body else { panic!("a row query") };
            let fds: Vec<String> = columns
                .iter()
                .filter_map(|c| match &c.source {
                    crate::bind::ScalarExpr::Column { source: crate::bind::ColumnSource::File { fd, .. }, .. } => {
                        Some(fd.clone())
                    }
                    _ => None,
                })
                .collect();
            let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["in_inode", "out_inode", "in_file_name", "out_fs_type"]);
            assert_eq!(fds, [fd_in, fd_out, fd_in, fd_out], "{sql}");
            let Err(Error::Query(q)) = bind(&format!("SELECT inode FROM syscalls.{event}")) else {
                panic!("{event}: a bare file column is ambiguous");
            };
            assert!(q.message.contains("has two fds; say which file: `in_inode` or `out_inode`"), "{}", q.message);
            assert_eq!(q.span.expect("positioned").start.column, 8);
        }
        // A one-fd call has no ends.
        assert!(bind("SELECT in_inode FROM syscalls.sys_enter_pread64").is_err());
    }
}
