//! Scalar expressions as C: explicit casts to the SQL operand type at every operator.

use super::local_name;
use crate::bind::{BinaryOp, ScalarExpr, StrPattern};
use crate::types::DataType;

/// The C expression computing `e` from the column locals.
pub fn c_expr(e: &ScalarExpr) -> String {
    match e {
        ScalarExpr::Column { source, .. } => local_name(source),
        ScalarExpr::Int { value, ty } if ty.is_signed() => match *value as i64 {
            i64::MIN => "(-9223372036854775807LL - 1)".into(),
            v if v < 0 => format!("({v}LL)"),
            v => format!("{v}LL"),
        },
        ScalarExpr::Int { value, .. } => format!("{value}ULL"),
        ScalarExpr::Bool(b) => (if *b { "1" } else { "0" }).into(),
        ScalarExpr::Not(x) => format!("(!{})", c_expr(x)),
        ScalarExpr::Cond { cond, then, otherwise, ty } => {
            let t = ty.c_type();
            format!("({} ? ({t}){} : ({t}){})", c_expr(cond), c_expr(then), c_expr(otherwise))
        }
        // Wrapping negation: through unsigned, so INT64_MIN stays defined.
        ScalarExpr::Neg(x) => format!("((__s64)(0ULL - (__u64){}))", c_expr(x)),
        ScalarExpr::Cast { expr, ty } => format!("(({}){})", ty.c_type(), c_expr(expr)),
        // A statement expression: the read needs a local to land in (0 when it faults).
        ScalarExpr::UserRead { addr, ty } => format!(
            "({{ {t} v = 0; bpf_probe_read_user(&v, sizeof(v), (const void *)(__u64){}); v; }})",
            c_expr(addr),
            t = ty.c_type()
        ),
        // Functions in the object's prelude when a program uses them (`codegen::user_strlen`, `codegen::env_int`).
        ScalarExpr::UserStrlen(addr) => format!("ebq_user_strlen((__u64){})", c_expr(addr)),
        ScalarExpr::EnvInt(names) => format!("{}()", super::env_int::function_name(names)),
        ScalarExpr::Str { .. } => unreachable!("string constants are written by codegen::strings::constant"),
        ScalarExpr::Binary { op, left, right, operand_ty, .. } => {
            let (l, r) = (c_expr(left), c_expr(right));
            let t = operand_ty.c_type();
            let signed = operand_ty.is_signed();
            match op {
                BinaryOp::And | BinaryOp::Or => format!("({l} {} {r})", op.c_op()),
                _ if *operand_ty == DataType::Bool => format!("({l} {} {r})", op.c_op()),
                BinaryOp::Div => format!("ebq_{}div({l}, {r})", if signed { "s" } else { "u" }),
                BinaryOp::Mod => format!("ebq_{}mod({l}, {r})", if signed { "s" } else { "u" }),
                BinaryOp::Shl => format!("(({t})ebq_shl({l}, {r}))"),
                BinaryOp::Shr if signed => format!("ebq_ashr({l}, {r})"),
                BinaryOp::Shr => format!("ebq_lshr({l}, {r})"),
                // Signed + - * wrap like the BPF ISA: compute in unsigned, then reinterpret
                // (signed overflow is undefined in C and clang rejects it in constants).
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul if signed => {
                    format!("((__s64)((__u64){l} {} (__u64){r}))", op.c_op())
                }
                _ => format!("(({t}){l} {} ({t}){r})", op.c_op()),
            }
        }
        // Branch-free: OR the XOR of every byte with the literal's, then test for
        // zero. Short-circuit `&&` chains would add a branch per byte, and the
        // verifier explores their combinations with every other condition.
        ScalarExpr::StrMatch { column, cap, value, pattern, negated } => {
            let local = local_name(column);
            let hit = match pattern {
                StrPattern::Exact | StrPattern::Prefix => {
                    let mut terms = byte_xors(value, &|i| format!("{local}[{i}]"));
                    if *pattern == StrPattern::Exact {
                        // The NUL after the literal: the string is no longer.
                        terms = if value.is_empty() {
                            format!("{local}[0]")
                        } else {
                            format!("{terms} | {local}[{}]", value.len())
                        };
                    }
                    if terms.is_empty() {
                        return (if *negated { "0" } else { "1" }).into();
                    }
                    return format!("(({terms}) {} 0)", if *negated { "!=" } else { "==" });
                }
                // A loop each (the string's length decides where to look): `codegen::like`.
                StrPattern::Suffix | StrPattern::Contains => super::like::call(*pattern, *cap, value, &local),
            };
            if *negated {
                format!("(!{hit})")
            } else {
                hit
            }
        }
    }
}

/// `(s[0] ^ 'a') | (s[1] ^ 'b') | ...`: zero when the bytes `at(i)` spell
/// `value` (empty for an empty literal).
pub(super) fn byte_xors(value: &str, at: &dyn Fn(usize) -> String) -> String {
    let terms: Vec<String> = value.bytes().enumerate().map(|(i, b)| format!("({} ^ {})", at(i), c_char(b))).collect();
    terms.join(" | ")
}

/// A byte as a C character constant, comparable with a `char` buffer element.
pub(super) fn c_char(b: u8) -> String {
    match b {
        b'\'' | b'\\' => format!("'\\{}'", b as char),
        0x20..=0x7e => format!("'{}'", b as char),
        _ => format!("(char){b:#04x}"),
    }
}
