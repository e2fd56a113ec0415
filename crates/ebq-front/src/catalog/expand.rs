//! Expanding events: one row per element of an array a system call passes.
//!
//! Linux AIO has no tracepoint of its own. A buffered request runs inside
//! `io_submit`, on no event an I/O view reads, and its completion is only what
//! `io_getevents` hands back. What the kernel does show is the two system
//! calls, whose arguments point at arrays in the caller's memory: the iocbs a
//! submit passes, the `io_event`s a reap fills. An expanding event is one of
//! those calls seen as its elements: the program attached to the call's
//! tracepoint walks the array (`bpf_loop`, so the verifier checks the row code
//! once, however long the array) and runs the query's row code once per
//! element, on a record ebq fills from the user memory (`codegen/expand.rs`).
//!
//! The records are laid out here, not read from tracefs: they are ebq's own,
//! 8-byte fields after an 8-byte header, so the binder, planner and codegen
//! treat them as any tracepoint's. The calls' own records (`nr`, `iocbpp`,
//! `ret`) are still read from their format files.

use super::{FieldKind, TpField, TracepointFormat};
use crate::parse::EXPANDING_EVENTS;

/// The category of the expanding events' names (`aio.submit`).
pub const CATEGORY: &str = EXPANDING_EVENTS[0].0;

/// An event that is one row per element of a system call's array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expansion {
    /// `aio.submit`: each iocb `io_submit` was given, at its entry.
    AioSubmit,
    /// `aio.complete`: each `io_event` `io_getevents` returned, at its exit.
    AioComplete,
}

/// `struct iocb` (`<linux/aio_abi.h>`, little-endian): where each field
/// ebq copies sits, and its size. A user ABI: it does not move.
pub const IOCB_FIELDS: [(&str, u32, u32, bool, &str); 10] = [
    ("data", 0, 8, false, "aio_data: the caller's cookie, returned in its io_event"),
    ("rw_flags", 12, 4, false, "aio_rw_flags: RWF_* flags (RWF_HIPRI, RWF_DSYNC, RWF_NOWAIT, …)"),
    (
        "opcode",
        16,
        2,
        false,
        "aio_lio_opcode: 0 PREAD, 1 PWRITE, 2 FSYNC, 3 FDSYNC, 5 POLL, 6 NOOP, 7 PREADV, 8 PWRITEV",
    ),
    ("reqprio", 18, 2, true, "aio_reqprio: I/O priority"),
    ("fd", 20, 4, false, "aio_fildes: the file's fd"),
    ("buf", 24, 8, false, "aio_buf: the buffer (PREAD/PWRITE) or the iovec array (PREADV/PWRITEV)"),
    ("nbytes", 32, 8, false, "aio_nbytes: bytes (PREAD/PWRITE) or iovec count (PREADV/PWRITEV)"),
    ("offset", 40, 8, true, "aio_offset: the file offset"),
    ("flags", 56, 4, false, "aio_flags: IOCB_FLAG_RESFD, IOCB_FLAG_IOPRIO"),
    ("resfd", 60, 4, false, "aio_resfd: the eventfd signalled at completion (IOCB_FLAG_RESFD)"),
];

/// Bytes of `struct iocb`.
pub const IOCB_SIZE: u32 = 64;

/// `struct io_event`: the fields, offsets, sizes, signedness and meaning.
pub const IO_EVENT_FIELDS: [(&str, u32, u32, bool, &str); 4] = [
    ("data", 0, 8, false, "the iocb's aio_data"),
    ("iocb", 8, 8, false, "the iocb's address in the caller (its `iocb` at aio.submit)"),
    ("res", 16, 8, true, "the result: bytes moved, or -errno"),
    ("res2", 24, 8, true, "the secondary result"),
];

/// Bytes of `struct io_event`.
pub const IO_EVENT_SIZE: u32 = 32;

impl Expansion {
    /// Every expanding event.
    pub const ALL: [Expansion; 2] = [Expansion::AioSubmit, Expansion::AioComplete];

    /// The expanding event named `category.name`, if it is one.
    pub fn named(category: &str, name: &str) -> Option<Expansion> {
        Self::ALL.into_iter().find(|x| category == CATEGORY && x.name() == name)
    }

    /// Its name after the category (the parser's [`EXPANDING_EVENTS`], in
    /// the order of [`Expansion::ALL`]).
    pub fn name(self) -> &'static str {
        EXPANDING_EVENTS[self as usize].1
    }

    /// The tracepoint the program attaches to.
    pub fn trigger(self) -> (&'static str, &'static str) {
        match self {
            Expansion::AioSubmit => ("syscalls", "sys_enter_io_submit"),
            Expansion::AioComplete => ("syscalls", "sys_exit_io_getevents"),
        }
    }

    /// The trigger record's fields the program reads (each an aligned 8-byte
    /// integer in its format file): the array's length and address, and the
    /// AIO context. `io_getevents`' exit has only `ret` (the events filled);
    /// its array and context are the call's arguments, read from the task's
    /// saved registers.
    pub fn trigger_fields(self) -> &'static [&'static str] {
        match self {
            Expansion::AioSubmit => &["ctx_id", "nr", "iocbpp"],
            Expansion::AioComplete => &["ret"],
        }
    }

    /// What one row is, for `describe` and EXPLAIN.
    pub fn description(self) -> &'static str {
        match self {
            Expansion::AioSubmit => "one row per iocb passed to io_submit, read from the caller's memory at its entry",
            Expansion::AioComplete => {
                "one row per io_event io_getevents returned, read from the caller's memory at its exit"
            }
        }
    }

    /// The columns: the AIO context, the element's position in the call's
    /// array, then the element's own fields (and at a submit the iocb's
    /// address, which its completion names).
    pub fn format(self) -> TracepointFormat {
        let elements: &[(&str, u32, u32, bool, &str)] = match self {
            Expansion::AioSubmit => &IOCB_FIELDS,
            Expansion::AioComplete => &IO_EVENT_FIELDS,
        };
        let mut fields: Vec<(&str, bool, &str)> = vec![
            ("ctx_id", false, "the AIO context (io_setup's aio_context_t)"),
            ("index", false, "the element's position in the call's array"),
        ];
        if self == Expansion::AioSubmit {
            fields.push(("iocb", false, "the iocb's address in the caller (its completion's `iocb`)"));
        }
        fields.extend(elements.iter().map(|(name, _, _, signed, what)| (*name, *signed, *what)));
        let fields = fields
            .into_iter()
            .enumerate()
            .map(|(i, (name, signed, what))| TpField {
                name: name.into(),
                c_type: what.into(),
                offset: 8 + 8 * i as u32,
                size: 8,
                signed,
                kind: FieldKind::Int,
            })
            .collect();
        TracepointFormat { category: CATEGORY.into(), name: self.name().into(), id: 0, fields }
    }

    /// The element's layout in user memory: `(column, offset, size)` of each
    /// field copied into the record, and the element's size.
    pub fn element(self) -> (Vec<(&'static str, u32, u32)>, u32) {
        match self {
            Expansion::AioSubmit => (IOCB_FIELDS.iter().map(|(n, o, s, _, _)| (*n, *o, *s)).collect(), IOCB_SIZE),
            Expansion::AioComplete => {
                (IO_EVENT_FIELDS.iter().map(|(n, o, s, _, _)| (*n, *o, *s)).collect(), IO_EVENT_SIZE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_aligned_eight_byte_fields_with_the_element_columns() {
        let submit = Expansion::AioSubmit.format();
        let names: Vec<&str> = submit.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ctx_id", "index", "iocb", "data", "rw_flags", "opcode", "reqprio", "fd", "buf", "nbytes", "offset",
                "flags", "resfd"
            ]
        );
        assert!(submit.fields.iter().all(|f| f.size == 8 && f.offset >= 8 && f.offset % 8 == 0));
        assert!(submit.field("offset").unwrap().signed && !submit.field("nbytes").unwrap().signed);
        let complete = Expansion::AioComplete.format();
        let names: Vec<&str> = complete.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["ctx_id", "index", "data", "iocb", "res", "res2"]);
        assert_eq!(Expansion::named("aio", "complete"), Some(Expansion::AioComplete));
        assert_eq!(Expansion::named("syscalls", "submit"), None);
    }

    /// The copied fields lie inside the element and do not overlap.
    #[test]
    fn element_fields_fit_their_struct() {
        for x in Expansion::ALL {
            let (fields, size) = x.element();
            let mut end = 0;
            for (name, offset, len) in fields {
                assert!(offset >= end && offset + len <= size, "{x:?} {name}");
                end = offset + len;
            }
        }
    }

    /// Every expanding event is one the parser prints as written, and no other.
    #[test]
    fn every_expansion_is_named_by_the_parser() {
        assert_eq!(Expansion::ALL.map(|x| (CATEGORY, x.name())), crate::parse::EXPANDING_EVENTS);
    }
}
