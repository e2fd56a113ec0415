//! Parser for tracefs `format` files.
//!
//! A format file looks like this (the kernel puts tabs where this shows spaces):
//!
//! ```text
//! name: sys_enter_pread64
//! ID: 838
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     field:unsigned int fd;    offset:16;    size:8;    signed:0;
//!
//! print fmt: "fd: 0x%08lx", ...
//! ```
//!
//! The kernel's offsets and sizes are taken as given; the C declaration is only
//! used for the field's name and to decide how its bytes are read ([`FieldKind`]),
//! except that a `syscalls` argument declared narrower than its 8-byte slot is
//! read at its declared width (`declared_width`).
//! Declarations we do not understand become [`FieldKind::Unsupported`] rather than
//! errors, so one odd field never hides a whole event. At `syscalls` tracepoints a
//! `const char *` argument is a user-space string ([`FieldKind::UserStr`]): the system
//! call ABI makes every pointer argument a `__user` one, which other categories' pointers
//! (kernel addresses) are not.

use super::{FieldKind, TpField, TracepointFormat};

/// Parses the text of a tracefs `format` file for an event of `category`.
///
/// `common_*` header fields are dropped. Parsing stops at `print fmt:`, whose
/// expression may span several lines. On failure returns the 1-based line
/// number and a message; never panics, whatever the input.
pub fn parse_format(category: &str, text: &str) -> Result<TracepointFormat, (usize, String)> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut line_count = 0;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        line_count = lineno;
        let line = raw.trim();
        if line.is_empty() || line == "format:" {
            continue;
        }
        if line.starts_with("print fmt:") {
            break;
        }
        if let Some(rest) = line.strip_prefix("name:") {
            name = Some(rest.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("ID:") {
            let parsed = rest.trim().parse::<u32>();
            id = Some(parsed.map_err(|_| (lineno, format!("bad ID `{}`", rest.trim())))?);
        } else if line.starts_with("field:") {
            let field = parse_field_line(line).map_err(|m| (lineno, m))?;
            if !field.name.starts_with("common_") {
                fields.push(field);
            }
        } else {
            // Strict on purpose: an unknown line means the layout changed and we
            // would rather say so than guess at offsets.
            return Err((lineno, format!("unexpected line `{}`", truncate(line))));
        }
    }
    let end = line_count.max(1);
    let name = name.filter(|n| !n.is_empty());
    let name = name.ok_or_else(|| (end, "missing `name:` line".to_string()))?;
    let id = id.ok_or_else(|| (end, "missing `ID:` line".to_string()))?;
    if category == "syscalls" {
        for f in &mut fields {
            match f.c_type.as_str() {
                "const char *" if f.kind == FieldKind::Int && f.size == 8 => f.kind = FieldKind::UserStr,
                "const char *const *" if f.kind == FieldKind::Int && f.size == 8 => f.kind = FieldKind::UserArgv,
                ty if f.kind == FieldKind::Int && f.size == 8 => {
                    if let Some((size, signed)) = declared_width(ty) {
                        (f.size, f.signed) = (size, signed);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(TracepointFormat { category: category.to_string(), name, id, fields })
}

/// The width in bytes and the signedness of a system call argument declared
/// `ty`, when narrower than the 8-byte slot the `syscalls` records give every
/// argument; `None` for 8-byte and unknown types (which keep the slot as the
/// format file describes it).
///
/// A slot holds the register as the caller left it, but the kernel uses only
/// the declared type's bytes (`SYSCALL_DEFINE` casts each argument: `unsigned
/// int fd` is the register's low 32 bits). Callers may leave anything in the
/// upper half: a Rust `i32` fd reached `fsync` as `0x6_00000003`, which the
/// kernel reads as fd 3. So such a field is read at its declared width and
/// signedness, as bpftrace reads `args.fd` and `args.dfd` (-100, AT_FDCWD):
/// the low bytes of the slot, at the slot's offset on the little-endian
/// machines ebq runs on (x86-64, arm64). The format files say `signed:0` for
/// every argument; the declared type says better.
fn declared_width(ty: &str) -> Option<(u32, bool)> {
    let ty = ty.strip_prefix("const ").unwrap_or(ty);
    match ty {
        "int" | "signed int" | "signed" | "pid_t" | "key_t" | "key_serial_t" | "mqd_t" | "clockid_t" | "timer_t"
        | "rwf_t" | "s32" | "__s32" | "int32_t" => Some((4, true)),
        "unsigned int" | "unsigned" | "uid_t" | "gid_t" | "qid_t" | "u32" | "__u32" | "uint32_t" => Some((4, false)),
        "short" | "s16" | "__s16" => Some((2, true)),
        "unsigned short" | "umode_t" | "u16" | "__u16" => Some((2, false)),
        _ => None,
    }
}

/// Parses `field:<decl>;\toffset:N;\tsize:N;\tsigned:N;`.
fn parse_field_line(line: &str) -> Result<TpField, String> {
    let mut parts = line.split(';').map(str::trim);
    let decl = parts.next().and_then(|p| p.strip_prefix("field:")).unwrap_or("").trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in parts.filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once(':') else {
            return Err(format!("expected `key:value`, found `{}`", truncate(part)));
        };
        let value = value.trim();
        let number = || value.parse::<u32>().map_err(|_| format!("bad {key} `{value}`"));
        match key.trim() {
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = number()? != 0,
            // Unknown attributes are harmless: the layout is fully given by offset/size.
            _ => {}
        }
    }
    let offset = offset.ok_or("field without `offset:`")?;
    let size = size.ok_or("field without `size:`")?;
    let decl = parse_decl(decl)?;
    let kind = decl.kind(size);
    Ok(TpField { name: decl.name, c_type: decl.c_type, offset, size, signed, kind })
}

/// The parts of a C field declaration that matter to us.
struct Decl {
    name: String,
    /// Type as written, whitespace-normalised, array length appended (`char[16]`).
    c_type: String,
    /// The element (or scalar) type without qualifiers or `__data_loc`.
    base: String,
    data_loc: bool,
    /// `Some(text between the brackets)` for `T name[N]`.
    array: Option<String>,
    bit_field: bool,
}

/// Splits a declaration such as `unsigned int fd`, `char comm[16]`,
/// `__data_loc char[] cmd`, `char * buf` into name and type.
fn parse_decl(decl: &str) -> Result<Decl, String> {
    let mut rest = decl.trim();
    let data_loc = match rest.strip_prefix("__data_loc") {
        Some(r) if r.starts_with(char::is_whitespace) => {
            rest = r.trim_start();
            true
        }
        _ => false,
    };
    // Bit fields (`unsigned x:3`) are never emitted by current kernels; keep the name.
    let bit_field = rest.contains(':');
    if let Some((before, _)) = rest.split_once(':') {
        rest = before.trim_end();
    }
    let mut array = None;
    if let Some(before) = rest.strip_suffix(']') {
        let open = before.rfind('[').ok_or("unbalanced `]` in declaration")?;
        array = Some(before[open + 1..].trim().to_string());
        rest = before[..open].trim_end();
    }
    let name_start =
        rest.char_indices().rev().take_while(|&(_, c)| c.is_ascii_alphanumeric() || c == '_').last().map(|(i, _)| i);
    let Some(start) = name_start else {
        return Err(format!("no field name in `{}`", truncate(decl)));
    };
    let name = &rest[start..];
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(format!("bad field name `{}`", truncate(name)));
    }
    let ty = normalise_space(&rest[..start]);
    if ty.is_empty() {
        return Err(format!("no type in `{}`", truncate(decl)));
    }
    let mut c_type = if data_loc { format!("__data_loc {ty}") } else { ty.clone() };
    if let Some(len) = &array {
        c_type = format!("{c_type}[{len}]");
    }
    let base = ty.split(' ').filter(|w| !matches!(*w, "const" | "volatile")).collect::<Vec<_>>();
    Ok(Decl { name: name.to_string(), c_type, base: base.join(" "), data_loc, array, bit_field })
}

impl Decl {
    /// Decides how the field's `size` bytes are to be read.
    fn kind(&self, size: u32) -> FieldKind {
        let base = self.base.as_str();
        let is_char = matches!(base, "char" | "unsigned char" | "signed char");
        let aggregate = !base.contains('*') && (base.starts_with("struct ") || base.starts_with("union "));
        if self.bit_field || aggregate {
            return FieldKind::Unsupported;
        }
        if self.data_loc {
            // `__data_loc char[]` is a 4-byte (offset, length) descriptor of a string.
            return match (base, &self.array) {
                ("char[]", None) if size == 4 => FieldKind::DataLocStr,
                _ => FieldKind::Unsupported,
            };
        }
        if base.contains('[') {
            // Multi-dimensional or otherwise odd arrays.
            return FieldKind::Unsupported;
        }
        let Some(len) = &self.array else {
            return match size {
                1 | 2 | 4 | 8 => FieldKind::Int,
                _ => FieldKind::Unsupported,
            };
        };
        let len = match len.parse::<u32>() {
            Ok(n) if n > 0 => n,
            // `[]` (size 0 tail arrays) and symbolic lengths.
            _ => return FieldKind::Unsupported,
        };
        if is_char {
            return if size == len { FieldKind::CharArray { len } } else { FieldKind::Unsupported };
        }
        match size / len {
            elem_size @ (1 | 2 | 4 | 8) if size.is_multiple_of(len) => FieldKind::IntArray { elem_size, len },
            _ => FieldKind::Unsupported,
        }
    }
}

/// Collapses runs of whitespace to one space and trims, so `char  *` reads `char *`.
fn normalise_space(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Shortens text quoted in error messages so junk input cannot produce huge errors.
fn truncate(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests;
