//! System call names by number, for `syscall_name()` and `syscall_nr()`.
//!
//! The kernel keeps no name table a BPF program or tracefs exposes, so the
//! names come from the system call numbers the kernel's UAPI headers define
//! (`asm/unistd_64.h`, from linux-libc-dev): numbers are ABI and never change.
//! Without the header a number shows as `syscall_N`.

use std::collections::HashMap;
use std::sync::OnceLock;

/// Where the UAPI header may be.
const HEADERS: &[&str] = &["/usr/include/x86_64-linux-gnu/asm/unistd_64.h", "/usr/include/asm/unistd_64.h"];

fn table() -> &'static HashMap<i64, String> {
    static TABLE: OnceLock<HashMap<i64, String>> = OnceLock::new();
    TABLE.get_or_init(|| HEADERS.iter().find_map(|p| std::fs::read_to_string(p).ok()).map(parse).unwrap_or_default())
}

/// `#define __NR_read 0` lines → number → name.
fn parse(text: String) -> HashMap<i64, String> {
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next(), w.next()) {
                (Some("#define"), Some(name), Some(nr)) => {
                    Some((nr.parse().ok()?, name.strip_prefix("__NR_")?.to_string()))
                }
                _ => None,
            }
        })
        .collect()
}

/// The number of system call `name`, if this machine's headers know it.
pub fn syscall_nr(name: &str) -> Option<i64> {
    table().iter().find(|(_, n)| n.as_str() == name).map(|(nr, _)| *nr)
}

/// The name of system call `nr` (x86_64 numbering), or `syscall_N`.
pub fn syscall_name(nr: i64) -> String {
    table().get(&nr).cloned().unwrap_or_else(|| format!("syscall_{nr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_give_names() {
        let t = parse("#define __NR_read 0\n#define __NR_pread64 17\n#ifndef X\n#define _ASM_UNISTD 1\n".into());
        assert_eq!(t.get(&17).map(String::as_str), Some("pread64"));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn unknown_numbers_keep_their_number() {
        assert_eq!(syscall_name(-5), "syscall_-5");
    }
}
