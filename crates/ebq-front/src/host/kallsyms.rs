//! `/proc/kallsyms`: the kernel's symbols, read once per process.
//!
//! Two readers share one line parser: the binder asks whether a kprobe's
//! function is kernel text (names only: a reader without `CAP_SYSLOG` sees
//! zero addresses, and the names still count), and the stack symbolizer wants
//! addresses ([`text_symbols`]).

use std::collections::HashSet;
use std::sync::OnceLock;

/// Where the kernel lists its symbols.
const KALLSYMS: &str = "/proc/kallsyms";

/// One `ADDRESS TYPE NAME [module]` line: (address, type letter, name).
pub fn parse_line(line: &str) -> Option<(u64, &str, &str)> {
    let mut parts = line.split_ascii_whitespace();
    let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
    Some((addr, parts.next()?, parts.next()?))
}

/// Names of the text (`t`/`T`) symbols in a kallsyms text.
pub fn text_symbol_names(text: &str) -> HashSet<String> {
    text.lines()
        .filter_map(parse_line)
        .filter(|(_, kind, _)| matches!(*kind, "t" | "T"))
        .map(|(_, _, n)| n.into())
        .collect()
}

/// The running kernel's text symbol names, read once; `None` when
/// /proc/kallsyms cannot be read.
pub fn host_text_symbol_names() -> Option<&'static HashSet<String>> {
    static NAMES: OnceLock<Option<HashSet<String>>> = OnceLock::new();
    NAMES.get_or_init(|| std::fs::read_to_string(KALLSYMS).ok().map(|t| text_symbol_names(&t))).as_ref()
}

/// Text symbols (weak ones too) with a known address, sorted by address:
/// what kernel stack frames are named after. Empty when /proc/kallsyms is
/// unreadable or hides addresses (kptr_restrict).
pub fn text_symbols() -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(KALLSYMS).unwrap_or_default();
    let mut syms: Vec<(u64, String)> = text
        .lines()
        .filter_map(parse_line)
        .filter(|(addr, kind, _)| *addr != 0 && matches!(*kind, "t" | "T" | "w" | "W"))
        .map(|(addr, _, name)| (addr, name.to_string()))
        .collect();
    syms.sort_unstable();
    syms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_names_skip_data_and_keep_module_functions() {
        let text = "ffffffff816bab70 T vfs_read\n0000000000000000 t do_sys_openat2\n\
                    ffffffff82a00000 D jiffies\nffffffffc0001000 t ext4_read [ext4]\nnot a line\n";
        let names = text_symbol_names(text);
        let mut sorted: Vec<_> = names.iter().map(String::as_str).collect();
        sorted.sort();
        assert_eq!(sorted, ["do_sys_openat2", "ext4_read", "vfs_read"]);
        assert_eq!(parse_line("ffffffff816bab70 T vfs_read"), Some((0xffffffff816bab70, "T", "vfs_read")));
    }
}
