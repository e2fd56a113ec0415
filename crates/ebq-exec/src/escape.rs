//! Kernel strings (comm, file names, arguments) as text without losing bytes.
//!
//! The kernel hands ebq bytes, not UTF-8. Replacing invalid bytes by U+FFFD
//! would merge `zx\xffy` and `zx\xfey` into one group, one metric series and
//! one key in every file format. Instead each byte that is not part of valid
//! UTF-8 is written as `\xHH` (two lowercase hex digits) and a literal
//! backslash as `\\`, so the mapping is injective and reversible
//! ([`unescape_bytes`]); valid UTF-8 without backslashes is unchanged. Every
//! text output (table, JSON, CSV, Arrow/Parquet `Utf8` columns, metric labels,
//! OTLP attributes) carries the escaped form.

/// `raw` as valid UTF-8: invalid bytes as `\xHH`, `\` as `\\` (borrowed
/// when there is nothing to escape, the common case on a hot path).
pub fn escape_bytes(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(raw) {
        if !s.contains('\\') {
            return std::borrow::Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(raw.len() + 8);
    for chunk in raw.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\x");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The bytes [`escape_bytes`] was given, back from its text; `None` when
/// `text` is not such an escape (a lone `\` or a bad `\x`).
pub fn unescape_bytes(text: &str) -> Option<Vec<u8>> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) => {
                out.push(u8::from_str_radix(text.get(i + 2..i + 4)?, 16).ok()?);
                i += 4;
            }
            (b'\\', _) => return None,
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_bytes_and_backslashes_are_escaped_injectively() {
        assert_eq!(escape_bytes(b"zx\xffy"), "zx\\xffy");
        assert_eq!(escape_bytes(b"zx\xfey"), "zx\\xfey");
        assert_eq!(escape_bytes(b"zx\\xffy"), "zx\\\\xffy", "a literal backslash-x-f-f is not the byte 0xff");
        assert_eq!(escape_bytes("héllo \"q\"".as_bytes()), "héllo \"q\"");
        assert_eq!(escape_bytes(b"\xe2\x82"), "\\xe2\\x82", "a truncated sequence is two bytes");
        for raw in [&b"zx\xffy"[..], b"a\\b", b"\\x41", b"\xc3\xa9\xff\\", b""] {
            assert_eq!(unescape_bytes(&escape_bytes(raw)).as_deref(), Some(raw), "{raw:?}");
        }
        assert_eq!(unescape_bytes("a\\b"), None);
    }
}
