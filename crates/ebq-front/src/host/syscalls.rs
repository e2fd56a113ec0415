//! System call names by number, for `syscall_name()` and `syscall_nr()`:
//! a [`SyscallTable`] per kernel (`KernelInfo::syscalls`), which a bound
//! `syscall_name()` carries into user space.
//!
//! The kernel keeps no name table a BPF program or tracefs exposes, so the
//! names come from the system call numbers the kernel's UAPI headers define
//! (`asm/unistd_64.h`, from linux-libc-dev): numbers are ABI and never change.
//! Without the header a number shows as `syscall_N`.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Where the UAPI header may be.
const HEADERS: &[&str] = &["/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"];

/// System call numbers and names of one instruction set.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SyscallTable {
    names: HashMap<i64, String>,
}

/// Bound `syscall_name()` expressions carry a table: plans print its size,
/// not its hundreds of names.
impl std::fmt::Debug for SyscallTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SyscallTable({} names)", self.names.len())
    }
}

impl SyscallTable {
    /// Reads `#define __NR_read 0` lines (the header's format); other lines are skipped.
    pub fn parse(text: &str) -> SyscallTable {
        let names = text
            .lines()
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                match (w.next(), w.next(), w.next()) {
                    (Some("#define"), Some(name), Some(nr)) => {
                        Some((nr.parse().ok()?, name.strip_prefix("__NR_")?.to_string()))
                    }
                    _ => None,
                }
            })
            .collect();
        SyscallTable { names }
    }

    /// This machine's table, read once from its headers (empty without them):
    /// [`HostKernel`](super::HostKernel)'s; everyone else asks a `KernelInfo`.
    pub(super) fn host() -> &'static SyscallTable {
        static TABLE: OnceLock<SyscallTable> = OnceLock::new();
        TABLE.get_or_init(|| {
            HEADERS.iter().find_map(|p| std::fs::read_to_string(p).ok()).map(|t| Self::parse(&t)).unwrap_or_default()
        })
    }

    /// The number of system call `name`, if the table knows it.
    pub fn nr(&self, name: &str) -> Option<i64> {
        self.names.iter().find(|(_, n)| n.as_str() == name).map(|(nr, _)| *nr)
    }

    /// The name of system call `nr`, or `syscall_N`.
    pub fn name(&self, nr: i64) -> String {
        self.names.get(&nr).cloned().unwrap_or_else(|| format!("syscall_{nr}"))
    }

    /// How many system calls the table names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when the table names no system call (no header was found).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_give_names() {
        let t = SyscallTable::parse("#define __NR_read 0\n#define __NR_pread64 17\n#ifndef X\n#define _ASM_UNISTD 1\n");
        assert_eq!(t.name(17), "pread64");
        assert_eq!(t.nr("read"), Some(0));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn unknown_numbers_keep_their_number() {
        assert_eq!(SyscallTable::parse("#define __NR_read 0\n").name(-5), "syscall_-5");
        assert_eq!(SyscallTable::default().name(17), "syscall_17");
    }
}
