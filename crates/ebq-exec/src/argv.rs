//! execve's `argv` as one string a shell would read back as the same
//! arguments: each entry quoted by POSIX shell rules where it needs it.
//!
//! The kernel joins the entries with spaces (so `argv LIKE '%-o out%'`
//! filters the joined text in the kernel) and keeps where each entry after
//! the first starts in the field's last [`STARTS`] bytes
//! (`codegen::user_str::argv`): `a b` and `'a b'` were the same text without
//! them.

/// Bytes at the end of an argv field holding where entries 1..=7 start (0:
/// no such entry); the text ends before them, at a NUL.
pub const STARTS: usize = ebq_front::bind::ARGV_STARTS_BYTES as usize;

/// The argv field `raw` (text, NUL, then the starts) as one shell-quoted
/// string: `/bin/sh -c 'echo a b'`. An entry cut by the field's size is
/// quoted as far as it was read.
pub fn quoted(raw: &[u8]) -> String {
    let text_cap = raw.len().saturating_sub(STARTS);
    let text = &raw[..text_cap];
    let len = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    // The text filled its room: an entry starting at its end was cut away whole.
    let cut = len + 1 >= text_cap;
    let starts = raw[text_cap..].iter().map(|&s| usize::from(s)).take_while(|&s| s > 0);
    let bounds: Vec<usize> = std::iter::once(0).chain(starts).collect();
    let shown = |from: usize| from < len || from == len && !cut;
    let entries = bounds.iter().enumerate().take_while(|(i, &from)| *i == 0 || shown(from)).map(|(i, &from)| {
        // An entry ends at the space before the next one, or where the text was cut.
        let to = bounds.get(i + 1).map_or(len, |&next| next - 1).min(len);
        &text[from.min(len)..to.max(from.min(len))]
    });
    entries.map(|e| shell_word(&crate::escape::escape_bytes(e))).collect::<Vec<_>>().join(" ")
}

/// `word` as a POSIX shell word: as is when every character is one no shell
/// treats specially, else in single quotes, a `'` inside written `'\''`.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An argv field of `cap` bytes as the kernel fills it: the entries
    /// joined by spaces, a NUL, and the starts of entries 1.. at the end.
    fn field(entries: &[&str], cap: usize) -> Vec<u8> {
        let mut raw = vec![0u8; cap];
        let mut at = 0;
        for (i, e) in entries.iter().enumerate() {
            if i > 0 {
                raw[cap - STARTS + i - 1] = at as u8;
            }
            raw[at..at + e.len()].copy_from_slice(e.as_bytes());
            at += e.len() + 1;
            if i + 1 < entries.len() {
                raw[at - 1] = b' ';
            }
        }
        raw
    }

    #[test]
    fn words_are_quoted_only_where_a_shell_needs_it() {
        assert_eq!(shell_word("/usr/bin/ls"), "/usr/bin/ls");
        assert_eq!(shell_word("--color=auto"), "--color=auto");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word("*.txt"), "'*.txt'");
        assert_eq!(shell_word("a\\xffb"), r"'a\xffb'", "an escaped byte keeps its backslash, quoted");
    }

    #[test]
    fn an_argv_field_reads_back_as_its_entries() {
        let f = field(&["/bin/sh", "-c", "echo 'a b'", "", "x"], 64);
        assert_eq!(quoted(&f), r"/bin/sh -c 'echo '\''a b'\''' '' x");
        assert_eq!(quoted(&field(&["/bin/true"], 64)), "/bin/true");
        assert_eq!(quoted(&field(&["ls", ""], 64)), "ls ''", "a trailing empty entry");
        assert_eq!(quoted(&field(&["a b", "c"], 64)), "'a b' c");
        assert_eq!(quoted(&field(&["a", "b c"], 64)), "a 'b c'", "the same text, other entries");
        assert_eq!(quoted(&[0u8; 64]), "''", "nothing read: one empty entry");
    }

    #[test]
    fn an_entry_cut_by_the_field_is_quoted_as_far_as_it_was_read() {
        // 24 bytes: 15 of text, its NUL, 8 of starts. The kernel cut "0123456789ab" and dropped "c".
        let mut f = b"prog 0123456789\0".to_vec();
        f.extend([5, 18, 0, 0, 0, 0, 0, 0]);
        assert_eq!(quoted(&f), "prog 0123456789");
        // "012345678" fit with its space; the third entry starts where the text was cut.
        let mut g = b"prog 012345678 \0".to_vec();
        g.extend([5, 15, 0, 0, 0, 0, 0, 0]);
        assert_eq!(quoted(&g), "prog 012345678");
    }
}
