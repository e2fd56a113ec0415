//! Raw tracepoint arguments as columns, and the kernel structs behind them.
//!
//! A tracepoint's format record holds what its `TP_fast_assign` copied; its raw
//! arguments (`TP_PROTO`: `struct request *rq, blk_status_t error, unsigned int
//! nr_bytes`) hold everything else. With the kernel's BTF they are columns too, and a
//! pointer argument can be followed member by member:
//!
//! ```text
//! rq                        struct request *   → u64 (the address: compares, groups, pairs)
//! rq.__data_len             unsigned int       → u32
//! rq.q.disk.disk_name       char[32]           → string(32)
//! c.rq.q.disk.disk_name     the same, on the event aliased `c` (aliases resolve first)
//! ```
//!
//! Names: format fields and system columns win over raw arguments of the same name
//! (block_rq_complete's `error` stays the record's `int error`), so every query that
//! bound before means what it meant. A path's first component is an event alias when
//! one is so named, else a raw argument.
//!
//! A program sees either the record (classic tracepoint) or the raw arguments
//! (`tp_btf`), so one event's columns come from one or the other; [`super::Binder`]
//! records which, and a query that mixes them on one event is refused with the
//! position of the raw argument. One exception: a record field named like a system
//! column (`comm` at block_rq_issue, which the kernel copies from `current->comm`)
//! means the system column on an event that reads raw arguments, so
//! `SELECT i.comm, c.rq.q.disk.disk_name` binds (`super::bind_sides` binds twice
//! to know it). Reads are CO-RE (`BPF_CORE_READ`): offsets come from
//! the running kernel when the program loads, not from the BTF bound against.

use super::{BoundEvent, ColumnSource, EventSource, ScalarExpr};
use crate::btf::{Arg, Btf, LeafType, PathError};
use crate::error::{Error, QueryError, Span, Stage};
use crate::host::KernelInfo;
use crate::parse::EventName;
use crate::types::DataType;
use sqlparser::ast::Ident;

/// Longest string a `char[N]` member becomes (bytes incl. NUL), as for record strings.
const MAX_STRING_CAP: u32 = 256;

/// Members an unknown-member error lists before "…".
const LISTED_MEMBERS: usize = 24;

/// One raw-argument read, resolved against BTF: what codegen needs for one CO-RE read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawArg {
    /// The path as written, without an event qualifier: `rq.q.disk.disk_name`.
    pub path: String,
    /// The argument's position: the program reads `ctx[index]`.
    pub index: u32,
    /// The argument's type in C (`struct request *`), what `ctx[index]` is cast to.
    pub arg_c_type: String,
    /// Member accesses after the argument, one per pointer followed (`q`, `disk`,
    /// `disk_name`); members of embedded structs join theirs with `.` (`f_path.dentry`).
    pub accessors: Vec<String>,
    /// The value's type in C (`char[32]`), for comments and `describe`.
    pub c_type: String,
    /// Buffer capacity when the value is a `char[N]` string, or the string a
    /// `char *` points to.
    pub string_cap: Option<u16>,
    /// `str(path)` of a `char *` member: the value is the NUL-terminated
    /// kernel string at the pointer (`bpf_probe_read_kernel_str`), not the
    /// address. The path is then `str(path)` and names another local.
    pub string_at_pointer: bool,
}

impl RawArg {
    /// `str(…)` of this value, at most `cap` bytes with the NUL, when it is a
    /// `char *` (signed, unsigned or `const`); `call` names it.
    pub(super) fn string_at(&self, cap: u16, call: String) -> Option<RawArg> {
        let pointee = self.c_type.strip_suffix('*')?.trim_end().trim_start_matches("const ").trim_end_matches(" const");
        let is_char = matches!(pointee, "char" | "signed char" | "unsigned char");
        (is_char && !self.string_at_pointer).then(|| RawArg {
            path: call,
            string_cap: Some(cap),
            string_at_pointer: true,
            ..self.clone()
        })
    }
}

/// The column type a readable kernel value becomes: integers keep size and sign,
/// pointers are u64, a `char[N]` a string of at most N bytes (NUL included, as
/// record strings; bounded by [`MAX_STRING_CAP`]).
pub(super) fn column_type(leaf: LeafType) -> DataType {
    match leaf {
        LeafType::CharArray { len } => DataType::Str { cap: len.clamp(1, MAX_STRING_CAP) as u16 },
        leaf => leaf.data_type(),
    }
}

/// Where an identifier stands in the query.
fn ident_span(ident: &Ident) -> Option<Span> {
    Span::from_sql(ident.span)
}

/// The raw arguments of `event` with the BTF that types them: `None` unless it is a
/// tracepoint and the kernel has BTF for it (a `btf_trace_<name>` typedef).
pub(super) fn raw_args<'k>(kernel: &'k dyn KernelInfo, event: &BoundEvent) -> Option<(&'k Btf, Vec<Arg>)> {
    let EventName::Tracepoint { name, .. } = &event.name else { return None };
    if !matches!(event.source, EventSource::Tracepoint | EventSource::TracepointBtf) {
        return None;
    }
    let btf = kernel.btf()?;
    Some((btf, btf.tracepoint_args(name)?))
}

/// The names of `event`'s raw arguments (none without BTF), for suggestions.
pub(super) fn arg_names(kernel: &dyn KernelInfo, event: &BoundEvent) -> Vec<String> {
    raw_args(kernel, event).map(|(_, args)| args.into_iter().map(|a| a.name).collect()).unwrap_or_default()
}

/// Does `event` have a raw argument `name`?
pub(super) fn has_arg(kernel: &dyn KernelInfo, event: &BoundEvent, name: &str) -> bool {
    arg_names(kernel, event).iter().any(|a| a == name)
}

/// Raw argument `name` of `event` itself (no members), if it has one and it is readable.
pub(super) fn bare_arg(kernel: &dyn KernelInfo, event: &BoundEvent, name: &str) -> Option<ScalarExpr> {
    resolve(kernel, event, name, &[]).and_then(Result::ok)
}

/// Binds raw argument `arg` of `event` followed by members `path`; `None` when the
/// event has no such argument. Errors point at the offending path component.
pub(super) fn bind_path(
    kernel: &dyn KernelInfo,
    event: &BoundEvent,
    arg: &Ident,
    path: &[Ident],
) -> Option<crate::error::Result<ScalarExpr>> {
    let steps: Vec<&str> = path.iter().map(|p| p.value.as_str()).collect();
    let resolved = resolve(kernel, event, &arg.value, &steps)?;
    Some(resolved.map_err(|e| {
        let at = e.at().map_or(arg, |i| &path[i]);
        Error::Query(path_error(e, ident_span(at), event, &arg.value, &steps))
    }))
}

/// Resolves `arg.path…` against the kernel's BTF; `None` when `arg` is not a raw argument.
fn resolve(
    kernel: &dyn KernelInfo,
    event: &BoundEvent,
    arg: &str,
    path: &[&str],
) -> Option<Result<ScalarExpr, PathError>> {
    let (btf, args) = raw_args(kernel, event)?;
    let index = args.iter().position(|a| a.name == arg)?;
    let a = &args[index];
    let resolved = match btf.resolve_path(a.ty, path) {
        Ok(p) => p,
        Err(e) => return Some(Err(e)),
    };
    // ctx[i] holds a pointer or a scalar; a struct passed by value has no address to follow.
    if resolved.hops.first().is_some_and(|h| !h.deref) || a.c_type.contains("...") {
        let reason = crate::btf::Unreadable::Struct;
        return Some(Err(PathError::Unreadable { at: None, c_type: a.c_type.clone(), reason }));
    }
    let mut accessors: Vec<String> = vec![];
    for hop in &resolved.hops {
        match accessors.last_mut() {
            Some(last) if !hop.deref => *last = format!("{last}.{}", hop.member),
            _ => accessors.push(hop.member.clone()),
        }
    }
    let ty = column_type(resolved.leaf);
    let path_text = std::iter::once(arg).chain(path.iter().copied()).collect::<Vec<_>>().join(".");
    let raw = RawArg {
        path: path_text,
        index: index as u32,
        arg_c_type: a.c_type.clone(),
        accessors,
        c_type: btf.c_type_name(resolved.ty),
        string_cap: match ty {
            DataType::Str { cap } => Some(cap),
            _ => None,
        },
        string_at_pointer: false,
    };
    Some(Ok(ScalarExpr::Column { source: ColumnSource::Arg(Box::new(raw)), ty }))
}

/// A path error as the user sees it: at `span`, with the members to choose from.
fn path_error(e: PathError, span: Option<Span>, event: &BoundEvent, arg: &str, path: &[&str]) -> QueryError {
    let q = QueryError::new(Stage::Bind, e.to_string(), span);
    let describe = |upto: usize| {
        let walked: Vec<&str> = std::iter::once(arg).chain(path[..upto].iter().copied()).collect();
        format!("`ebq describe {} {}` lists its members", event.name, walked.join("."))
    };
    match e {
        PathError::UnknownMember { at, members, suggestions, .. } => {
            let mut listed: Vec<String> = members.iter().take(LISTED_MEMBERS).cloned().collect();
            if members.len() > LISTED_MEMBERS {
                listed.push(format!("… {} more", members.len() - LISTED_MEMBERS));
            }
            let mean = match suggestions.as_slice() {
                [] => String::new(),
                s => format!("did you mean {}? ", s.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ")),
            };
            q.with_help(format!("{mean}members: {}; {}", listed.join(", "), describe(at)))
        }
        PathError::Unreadable { at: Some(at), .. } => q.with_help(describe(at + 1)),
        _ => q,
    }
}

/// Which kind of columns a side read: the record's, or raw arguments (with the first one's position).
#[derive(Debug, Default)]
pub(super) struct SideReads {
    /// The first format-record column read (field or file column), by name.
    pub record: Option<String>,
    /// The first raw argument read: its path and position.
    pub raw: Option<(String, Option<Span>)>,
    /// Every column read, as the side's own program reads it, with its type
    /// (a union in FROM reads the same columns in each branch).
    pub columns: Vec<(ColumnSource, crate::types::DataType)>,
}

impl SideReads {
    /// Remembers column `column` of type `ty` (once).
    pub fn remember(&mut self, column: &ColumnSource, ty: crate::types::DataType) {
        let own = match column {
            ColumnSource::Start { column, .. } => column,
            other => other,
        };
        if !self.columns.iter().any(|(c, _)| c == own) {
            self.columns.push(((*own).clone(), ty));
        }
    }

    /// Notes a column read at `span`.
    pub fn note(&mut self, column: &ColumnSource, span: Option<Span>) {
        match column {
            ColumnSource::Start { column, .. } => self.note(column, span),
            ColumnSource::Field { name, .. } => {
                self.record.get_or_insert_with(|| name.clone());
            }
            // At iomap's direct-I/O events the file is the raw `iocb`'s, at filemap's faults the raw `mapping`'s.
            ColumnSource::File { column, fd } if crate::catalog::file_columns::is_raw_file_arg(fd) => {
                self.raw.get_or_insert_with(|| (column.name().to_string(), span));
            }
            ColumnSource::File { column, .. } => {
                self.record.get_or_insert_with(|| column.name().to_string());
            }
            ColumnSource::Arg(a) => {
                self.raw.get_or_insert_with(|| (a.path.clone(), span));
            }
            // A union column is read by each branch's program, decided per branch.
            ColumnSource::System(_) | ColumnSource::Union { .. } | ColumnSource::Middle { .. } => {}
        }
    }

    /// True when the side's program attaches as `tp_btf`; an error when it would need both.
    pub fn tp_btf(&self, event: &BoundEvent) -> crate::error::Result<bool> {
        match (&self.raw, &self.record) {
            (Some((arg, span)), Some(field)) => Err(Error::Query(
                QueryError::new(
                    Stage::Bind,
                    format!(
                        "`{arg}` is a raw argument of {event}, read by a tp_btf program, and `{field}` a field of its \
                         format record, which only the classic tracepoint program sees; one event's columns come from \
                         one or the other",
                        event = event.name
                    ),
                    *span,
                )
                .with_help(format!(
                    "read the value through the raw arguments instead of `{field}`, or drop `{arg}` \
                     (`ebq describe {}` lists both); system columns (comm, pid, tid, …) stay available, and \
                     a record field named like one (`comm`) means the system column in a tp_btf program",
                    event.name
                )),
            )),
            (raw, _) => Ok(raw.is_some()),
        }
    }
}

/// `event` attached as `tp_btf` when `tp_btf`, else unchanged.
pub(super) fn attach_as(mut event: BoundEvent, tp_btf: bool) -> BoundEvent {
    if tp_btf {
        event.source = EventSource::TracepointBtf;
    }
    event
}

impl super::Binder<'_> {
    /// Binds a dotted path that starts at a raw argument (`rq.q.disk.disk_name`,
    /// `c.rq.__data_len`); `None` when `parts` is not one, so the caller binds it as
    /// `alias.column`.
    pub(super) fn arg_path(&self, parts: &[Ident]) -> Option<crate::error::Result<ScalarExpr>> {
        let (sides, rest) = match self.side_named(&parts[0].value) {
            Some(_) if parts.len() <= 2 => return None,
            Some(side) => (vec![side], &parts[1..]),
            None => (self.sides.iter().collect(), parts),
        };
        let qualified = sides.len() == 1 && rest.len() < parts.len();
        let arg = &rest[0];
        let with_arg: Vec<&super::Side> =
            sides.into_iter().filter(|s| has_arg(self.kernel, s.event, &arg.value)).collect();
        let side = match with_arg.as_slice() {
            [side] => *side,
            [] if qualified => {
                let event = &self.side_named(&parts[0].value)?.event;
                let args = arg_names(self.kernel, event);
                let message = format!("`{}` is not a raw argument of {}", arg.value, event.name);
                let help = match args.as_slice() {
                    [] => "its raw arguments are not known: it is not a tracepoint, or the kernel has no BTF for it"
                        .to_string(),
                    args => format!("its raw arguments: {}", args.join(", ")),
                };
                return Some(Err(Error::Query(QueryError::new(Stage::Bind, message, ident_span(arg)).with_help(help))));
            }
            [] => return None,
            [a, b, ..] => {
                let message = format!(
                    "`{0}` is a raw argument of both joined events; write {1}.{0} or {2}.{0}",
                    arg.value,
                    a.display_name(),
                    b.display_name()
                );
                return Some(Err(Error::query(Stage::Bind, message, ident_span(arg))));
            }
        };
        let bound = bind_path(self.kernel, side.event, arg, &rest[1..])?;
        Some(bound.map(|column| {
            let whole = parts.iter().filter_map(ident_span).reduce(Span::union);
            self.note_read(side, &column, whole);
            side.carry(column)
        }))
    }
}

#[cfg(test)]
#[path = "btf_args_tests.rs"]
mod tests;
