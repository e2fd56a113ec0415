//! `LIKE '%abc'` and `LIKE '%abc%'` in the kernel: one small function per
//! pattern an object uses, in its prelude, called from the condition
//! (`ebq_ends_with_256__2eso(strings->ev_filename)`). Exact and prefix
//! matches need no loop and stay inline (`codegen::expr`).
//!
//! A string buffer's bytes after its first NUL are stale: the per-CPU
//! scratch is reused from event to event, and `bpf_probe_read_*_str` does
//! not clear the tail. So these functions look only before the NUL: the
//! suffix is the bytes ending at it, and a contained literal (no NUL in it)
//! is found by a scan that stops there. Each is one bounded loop over byte
//! indexes below the buffer's capacity, which the verifier walks index by
//! index (every read provably in bounds); the literal's bytes are compared
//! branch-free, as an exact match's are, so each index adds one path.

use super::expr::{byte_xors, c_char};
use crate::bind::{ScalarExpr, StrPattern};
use crate::plan::KernelPlan;
use std::fmt::Write as _;

/// The C call matching the string at `local` (a `cap`-byte buffer) against
/// `value` as `pattern` says (a suffix or contains pattern).
pub fn call(pattern: StrPattern, cap: u16, value: &str, local: &str) -> String {
    format!("{}({local})", function_name(pattern, cap, value))
}

/// The functions for every suffix and contains pattern `k`'s programs
/// match, with the comment that says what they share; empty when none does.
pub fn functions(k: &KernelPlan) -> String {
    let mut seen: Vec<(StrPattern, u16, String)> = vec![];
    k.visit_exprs(&mut |e| {
        e.visit(&mut |x| {
            if let ScalarExpr::StrMatch {
                cap, value, pattern: p @ (StrPattern::Suffix | StrPattern::Contains), ..
            } = x
            {
                let key = (*p, *cap, value.clone());
                if !seen.contains(&key) {
                    seen.push(key);
                }
            }
        });
    });
    if seen.is_empty() {
        return String::new();
    }
    let mut c = String::from(
        "/* LIKE '%abc' and LIKE '%abc%'. A string is the bytes before its buffer's first NUL: the\n \
         * bytes after it are stale (the per-CPU scratch is reused from event to event, and\n \
         * bpf_probe_read_*_str does not clear the tail), so these look only before the NUL. Each\n \
         * is one loop over indexes below the buffer's size, which the verifier walks one index at\n \
         * a time; the literal's bytes are compared branch-free. */\n",
    );
    for (pattern, cap, value) in &seen {
        c.push_str(&function(*pattern, *cap, value));
    }
    c
}

fn function(pattern: StrPattern, cap: u16, value: &str) -> String {
    let name = function_name(pattern, cap, value);
    let n = value.len();
    let shown = super::comment_safe(&quoted(value));
    let mut c = String::new();
    match pattern {
        StrPattern::Suffix => {
            // Indexes only ever grow from 0 (`s[i - n]` from the NUL back made clang count
            // from 0xffffffff, which the verifier refuses as pointer arithmetic).
            let _ = write!(
                c,
                "\n/* Does the string in s (a {cap}-byte buffer) end with {shown}? At least {n} bytes\n \
                 * long, its first NUL is at i + {n}: the suffix is the {n} bytes from i. */\n\
                 static __always_inline int {name}(const char *s)\n{{\n\
                 \tfor (__u32 i = 0; i < {n}; i++)\n\t\tif (!s[i])\n\t\t\treturn 0;\t/* shorter than the suffix */\n\
                 \tfor (__u32 i = 0; i + {n} < {cap}; i++)\n\t\tif (!s[i + {n}])\n\
                 \t\t\treturn ({}) == 0;\n\treturn 0;\n}}\n",
                byte_xors(value, &|k| if k == 0 { "s[i]".to_string() } else { format!("s[i + {k}]") })
            );
        }
        StrPattern::Contains => {
            let _ = write!(
                c,
                "\n/* Does {shown} occur in the string in s (a {cap}-byte buffer)? Tried at each start\n \
                 * up to the string's NUL: the literal holds no NUL, so a match lies before it. */\n\
                 static __always_inline int {name}(const char *s)\n{{\n\
                 \tfor (__u32 i = 0; i <= {cap} - {n}; i++) {{\n\t\tif (!s[i])\n\t\t\treturn 0;\n\
                 \t\tif (({}) == 0)\n\t\t\treturn 1;\n\t}}\n\treturn 0;\n}}\n",
                byte_xors(value, &|k| if k == 0 { "s[i]".to_string() } else { format!("s[i + {k}]") })
            );
        }
        StrPattern::Exact | StrPattern::Prefix => unreachable!("exact and prefix matches are inline"),
    }
    c
}

/// The literal as a C string literal, for comments.
fn quoted(value: &str) -> String {
    let body: String = value.bytes().map(|b| c_char(b).trim_matches('\'').to_string()).collect();
    format!("\"{}\"", body.replace('"', "\\\""))
}

/// `ebq_ends_with_CAP_LITERAL` / `ebq_contains_CAP_LITERAL`: the literal's
/// letters and digits as they are, any other byte as `_` and its hex (an
/// over-long literal cut, with a hash of the whole so names stay distinct).
fn function_name(pattern: StrPattern, cap: u16, value: &str) -> String {
    let kind = match pattern {
        StrPattern::Suffix => "ends_with",
        StrPattern::Contains => "contains",
        StrPattern::Exact | StrPattern::Prefix => unreachable!("exact and prefix matches are inline"),
    };
    let mut id = String::new();
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() {
            id.push(char::from(b));
        } else {
            let _ = write!(id, "_{b:02x}");
        }
    }
    const MAX: usize = 32;
    if id.len() > MAX {
        // FNV-1a: stable across runs and builds (EXPLAIN prints the name).
        let hash =
            value.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        id.truncate(MAX);
        let _ = write!(id, "_{hash:016x}");
    }
    format!("ebq_{kind}_{cap}_{id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_the_pattern_the_size_and_the_literal() {
        assert_eq!(function_name(StrPattern::Suffix, 256, ".so"), "ebq_ends_with_256__2eso");
        assert_eq!(function_name(StrPattern::Contains, 16, "ab1"), "ebq_contains_16_ab1");
        let long = "x".repeat(40);
        let (a, b) = (
            function_name(StrPattern::Contains, 256, &long),
            function_name(StrPattern::Contains, 256, &(long.clone() + "y")),
        );
        assert_ne!(a, b);
        assert!(a.starts_with(&format!("ebq_contains_256_{}_", "x".repeat(32))), "{a}");
    }

    #[test]
    fn a_suffix_is_read_before_the_nul_and_a_contained_literal_searched_up_to_it() {
        assert_eq!(
            function(StrPattern::Suffix, 256, ".so"),
            "\n/* Does the string in s (a 256-byte buffer) end with \".so\"? At least 3 bytes\n \
             * long, its first NUL is at i + 3: the suffix is the 3 bytes from i. */\n\
             static __always_inline int ebq_ends_with_256__2eso(const char *s)\n{\n\
             \tfor (__u32 i = 0; i < 3; i++)\n\t\tif (!s[i])\n\t\t\treturn 0;\t/* shorter than the suffix */\n\
             \tfor (__u32 i = 0; i + 3 < 256; i++)\n\t\tif (!s[i + 3])\n\
             \t\t\treturn ((s[i] ^ '.') | (s[i + 1] ^ 's') | (s[i + 2] ^ 'o')) == 0;\n\treturn 0;\n}\n"
        );
        assert_eq!(
            function(StrPattern::Contains, 16, "ab"),
            "\n/* Does \"ab\" occur in the string in s (a 16-byte buffer)? Tried at each start\n \
             * up to the string's NUL: the literal holds no NUL, so a match lies before it. */\n\
             static __always_inline int ebq_contains_16_ab(const char *s)\n{\n\
             \tfor (__u32 i = 0; i <= 16 - 2; i++) {\n\t\tif (!s[i])\n\t\t\treturn 0;\n\
             \t\tif (((s[i] ^ 'a') | (s[i + 1] ^ 'b')) == 0)\n\t\t\treturn 1;\n\t}\n\treturn 0;\n}\n"
        );
    }
}
