//! Named values from a tracepoint's `print fmt:` line: the tables of
//! `__print_flags(REC->field, "|", { value, "NAME" }, …)` and
//! `__print_symbolic(REC->field, { value, "NAME" }, …)`.
//!
//! Why: some constants a query needs are C `#define`s, absent from the
//! kernel's BTF (iomap's `IOCB_AIO_RW` is `1 << 23` on 6.18 and moves between
//! kernels); the tracepoint that prints them carries their values, so
//! `print_flag('iomap.iomap_dio_rw_begin', 'ki_flags', 'AIO_RW')` reads the
//! running kernel's instead of a number written into the query.

/// The value named `name` in the print table of `field` in format file `text`.
/// `Err` says what is missing, listing the table's names when the name is not among them.
pub fn flag_value(text: &str, field: &str, name: &str) -> Result<u64, String> {
    let table = table(text, field)?;
    if let Some((_, v)) = table.iter().find(|(n, _)| n == name) {
        return Ok(*v);
    }
    let names: Vec<&str> = table.iter().map(|(n, _)| n.as_str()).collect();
    Err(format!("`{name}` is not in the print table of `{field}`: {}", names.join(", ")))
}

/// The (name, value) pairs printed for `field`, in the table's order.
fn table(text: &str, field: &str) -> Result<Vec<(String, u64)>, String> {
    let fmt = text.split_once("print fmt:").map(|(_, f)| f).ok_or("the format file has no `print fmt:` line")?;
    for marker in ["__print_flags(", "__print_symbolic("] {
        let mut rest = fmt;
        while let Some(at) = rest.find(marker) {
            let call = &rest[at + marker.len()..];
            rest = call;
            let body = &call[..closing(call).ok_or("unbalanced parentheses in `print fmt:`")?];
            let arg = body.split(',').next().unwrap_or("").trim();
            if arg.trim_start_matches('(').trim_end_matches(')').trim() != format!("REC->{field}") {
                continue;
            }
            return pairs(body);
        }
    }
    Err(format!("`print fmt:` prints no flag or symbol table for `{field}`"))
}

/// The index of the `)` closing a call whose arguments start `s`.
fn closing(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' if depth > 0 => depth -= 1,
            ')' => return Some(i),
            _ => {}
        }
    }
    None
}

/// The `{ value, "NAME" }` groups of a print call's arguments.
fn pairs(body: &str) -> Result<Vec<(String, u64)>, String> {
    let mut out = vec![];
    let mut rest = body;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').ok_or("unbalanced braces in `print fmt:`")? + open;
        let group = &rest[open + 1..close];
        rest = &rest[close + 1..];
        let (value, name) = group.rsplit_once(',').ok_or_else(|| format!("cannot read `{{{group}}}`"))?;
        let name = name.trim().trim_matches('"').to_string();
        out.push((name, eval(value).ok_or_else(|| format!("cannot evaluate `{}`", value.trim()))?));
    }
    Ok(out)
}

/// Evaluates a C constant expression of the print tables: integer literals
/// (hex or decimal, `U`/`L` suffixes), parentheses, casts to named types
/// (`( int)`, `(( __kernel_rwf_t)0x1)`), `<<`, `|` and `+`.
fn eval(expr: &str) -> Option<u64> {
    let tokens = tokenize(expr)?;
    let mut p = Parser { tokens, at: 0 };
    let v = p.or()?;
    (p.at == p.tokens.len()).then_some(v)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(u64),
    Word,
    Open,
    Close,
    Shl,
    Or,
    Plus,
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
    let b = s.as_bytes();
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let single = match c {
            b'(' => Some(Tok::Open),
            b')' => Some(Tok::Close),
            b'|' => Some(Tok::Or),
            b'+' => Some(Tok::Plus),
            _ => None,
        };
        if let Some(t) = single {
            out.push(t);
            i += 1;
            continue;
        }
        match c {
            b' ' | b'\t' | b'\n' => i += 1,
            b'<' if b.get(i + 1) == Some(&b'<') => {
                out.push(Tok::Shl);
                i += 2;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let lit = s[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
                let v = match lit.strip_prefix("0x").or_else(|| lit.strip_prefix("0X")) {
                    Some(hex) => u64::from_str_radix(hex, 16).ok()?,
                    None => lit.parse().ok()?,
                };
                out.push(Tok::Num(v));
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                out.push(Tok::Word);
            }
            _ => return None,
        }
    }
    Some(out)
}

struct Parser {
    tokens: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self, k: usize) -> Option<&Tok> {
        self.tokens.get(self.at + k)
    }

    fn or(&mut self) -> Option<u64> {
        let mut v = self.shift()?;
        while self.peek(0) == Some(&Tok::Or) {
            self.at += 1;
            v |= self.shift()?;
        }
        Some(v)
    }

    fn shift(&mut self) -> Option<u64> {
        let mut v = self.sum()?;
        while self.peek(0) == Some(&Tok::Shl) {
            self.at += 1;
            v = v.checked_shl(u32::try_from(self.sum()?).ok()?)?;
        }
        Some(v)
    }

    fn sum(&mut self) -> Option<u64> {
        let mut v = self.unary()?;
        while self.peek(0) == Some(&Tok::Plus) {
            self.at += 1;
            v = v.checked_add(self.unary()?)?;
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<u64> {
        match self.peek(0)?.clone() {
            Tok::Num(v) => {
                self.at += 1;
                Some(v)
            }
            Tok::Open => {
                // A cast: `(` words `)` before an operand.
                let words = self.tokens[self.at + 1..].iter().take_while(|t| **t == Tok::Word).count();
                if words > 0 && self.peek(words + 1) == Some(&Tok::Close) {
                    self.at += words + 2;
                    return self.unary();
                }
                self.at += 1;
                let v = self.or()?;
                (self.peek(0) == Some(&Tok::Close)).then(|| self.at += 1)?;
                Some(v)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IOMAP: &str = r#"name: iomap_dio_rw_begin
print fmt: "dev %d:%d flags %s dio_flags %s aio %d", ((unsigned int) ((REC->dev) >> 20)), __print_flags(REC->ki_flags, "|", { ( int) (( __kernel_rwf_t)0x00000001), "HIPRI" }, { ( int) (( __kernel_rwf_t)0x00000080), "DONTCACHE" }, { (1 << 16), "EVENTFD"}, { (1 << 18), "WRITE" }, { (1 << 23), "AIO_RW" }), __print_flags(REC->dio_flags, "|", {(1 << 0), "DIO_FORCE_WAIT" }, {(1 << 2), "DIO_PARTIAL" }), REC->aio
"#;

    #[test]
    fn reads_flag_values_through_casts_and_shifts() {
        assert_eq!(flag_value(IOMAP, "ki_flags", "AIO_RW"), Ok(1 << 23));
        assert_eq!(flag_value(IOMAP, "ki_flags", "WRITE"), Ok(1 << 18));
        assert_eq!(flag_value(IOMAP, "ki_flags", "DONTCACHE"), Ok(0x80));
        assert_eq!(flag_value(IOMAP, "dio_flags", "DIO_PARTIAL"), Ok(4));
    }

    #[test]
    fn says_what_is_missing() {
        let e = flag_value(IOMAP, "ki_flags", "AIO").unwrap_err();
        assert!(e.contains("HIPRI, DONTCACHE, EVENTFD, WRITE, AIO_RW"), "{e}");
        assert!(flag_value(IOMAP, "dev", "X").unwrap_err().contains("no flag or symbol table"));
        assert!(flag_value("name: x\n", "f", "X").unwrap_err().contains("no `print fmt:`"));
    }

    #[test]
    fn symbolic_tables_too() {
        let text = r#"print fmt: "%s", __print_symbolic(REC->op, { 0, "READ" }, { 1UL, "WRITE" }, { 0x10 | 2, "X" })"#;
        assert_eq!(flag_value(text, "op", "WRITE"), Ok(1));
        assert_eq!(flag_value(text, "op", "X"), Ok(18));
    }
}
