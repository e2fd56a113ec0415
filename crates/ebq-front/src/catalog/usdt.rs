//! USDT argument specs and the columns they give a probe.
//!
//! A `<sys/sdt.h>` probe records each argument as the assembler operand GCC
//! chose for it, prefixed by its size in bytes, negative when the C type is
//! signed: `-4@%esi` (an `int` in `esi`), `8@-16(%rbp)` (a `long` on the
//! stack), `4@(%rdi)` (memory at `rdi`), `8@0(%r13,%rax,8)` (an indexed
//! array element), `-4@$5` (the constant 5). ebq reads
//! each one in BPF from the probe's saved registers (`struct pt_regs`), with
//! `bpf_probe_read_user` for memory operands, then sign- or zero-extends it to
//! 64 bits: the column is `s64` when the argument is signed, else `u64`.
//!
//! One probe name may have several sites (the macro expanded in several
//! places, or inlined), each with its own operands; the columns are the
//! union (signed when any site's argument is), and codegen picks the site's
//! operands by the attach cookie ([`UsdtSpecs::variants`]).

use super::{glob::glob_match, Catalog, FieldKind, TpField, TracepointFormat};
use crate::host::usdt::UsdtSite;
use crate::host::ElfError;

impl Catalog {
    /// The USDT probes of binary `path` whose `PROVIDER:NAME` (or NAME, when
    /// `pattern` names no provider) matches the glob `pattern`, as
    /// `usdt:FILE:PROVIDER:NAME` (FILE resolved), sorted, each once.
    pub fn list_usdt(&self, path: &str, pattern: &str) -> Result<Vec<String>, String> {
        let file = self.kernel().resolve_binary(path).map_err(|_| format!("no file `{path}`"))?;
        let sites = self.kernel().usdt_sites(&file).map_err(|e| match e {
            ElfError::NotElf(why) => why,
            _ => format!("cannot read {}", file.display()),
        })?;
        let mut out: Vec<String> = sites
            .iter()
            .filter(|s| {
                let full = format!("{}:{}", s.provider, s.name);
                glob_match(pattern, &full) || (!pattern.contains(':') && glob_match(pattern, &s.name))
            })
            .map(|s| format!("usdt:{}:{}:{}", file.display(), s.provider, s.name))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
}

/// Where an argument's value is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UsdtOperand {
    /// In a register (`struct pt_regs` field name).
    Reg(&'static str),
    /// In user memory at base register + index register × scale + displacement.
    Mem {
        /// Base register (`struct pt_regs` field name).
        base: &'static str,
        /// Index register and scale (1, 2, 4, 8), as in `0(%r13,%rax,8)`.
        index: Option<(&'static str, u8)>,
        /// Displacement in bytes.
        offset: i64,
    },
    /// A constant.
    Const(i64),
}

/// One argument: its size (1, 2, 4, 8 bytes), signedness and operand.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UsdtArg {
    /// Size in bytes.
    pub size: u8,
    /// Signed (the spec's size was negative).
    pub signed: bool,
    /// Where the value is.
    pub operand: UsdtOperand,
    /// The spec as written, for EXPLAIN and `ebq describe`.
    pub spec: String,
}

/// The `struct pt_regs` field (`<asm/ptrace.h>`, x86-64) holding register
/// `name` (`%eax`, `%r13d`, `%sil`, without the `%`); `None` for registers
/// ebq does not map (`%ah`, segment and vector registers).
pub fn pt_regs_field(name: &str) -> Option<&'static str> {
    const LEGACY: [(&str, [&str; 4]); 8] = [
        ("rax", ["rax", "eax", "ax", "al"]),
        ("rbx", ["rbx", "ebx", "bx", "bl"]),
        ("rcx", ["rcx", "ecx", "cx", "cl"]),
        ("rdx", ["rdx", "edx", "dx", "dl"]),
        ("rsi", ["rsi", "esi", "si", "sil"]),
        ("rdi", ["rdi", "edi", "di", "dil"]),
        ("rbp", ["rbp", "ebp", "bp", "bpl"]),
        ("rsp", ["rsp", "esp", "sp", "spl"]),
    ];
    const NUMBERED: [&str; 8] = ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"];
    if let Some((field, _)) = LEGACY.iter().find(|(_, names)| names.contains(&name)) {
        return Some(field);
    }
    if name == "rip" {
        return Some("rip");
    }
    let base = name.trim_end_matches(['d', 'w', 'b']);
    let suffix = &name[base.len()..];
    NUMBERED.iter().find(|r| **r == base && suffix.len() <= 1).copied()
}

/// Parses one argument spec (`-4@%esi`, `8@-16(%rbp)`, `-4@$5`).
pub fn parse_arg(spec: &str) -> Result<UsdtArg, String> {
    let bad = |why: &str| Err(format!("USDT argument `{spec}`: {why}"));
    let Some((size, operand)) = spec.split_once('@') else { return bad("expected SIZE@OPERAND") };
    let size: i32 = match size.parse::<i32>() {
        Ok(n) if [1, 2, 4, 8].contains(&n.abs()) => n,
        _ => return bad("the size must be ±1, 2, 4 or 8"),
    };
    let reg = |r: &str| match r.strip_prefix('%').and_then(pt_regs_field) {
        Some(f) => Ok(f),
        None => Err(format!("USDT argument `{spec}`: register `{r}` is not one ebq reads")),
    };
    let operand = if let Some(c) = operand.strip_prefix('$') {
        let parsed = match c.strip_prefix("-") {
            Some(neg) => parse_int(neg).map(|v| v.wrapping_neg()),
            None => parse_int(c),
        };
        match parsed {
            Some(v) => UsdtOperand::Const(v),
            None => return bad("a constant must be a number (a symbol's address is not supported)"),
        }
    } else if operand.starts_with('%') {
        UsdtOperand::Reg(reg(operand)?)
    } else if let Some((disp, rest)) = operand.split_once('(') {
        let Some(inner) = rest.strip_suffix(')') else { return bad("unbalanced parentheses") };
        let parts: Vec<&str> = inner.split(',').collect();
        let (inner, index) = match parts[..] {
            [base] => (base, None),
            [base, index, scale] => match scale.parse::<u8>() {
                Ok(k) if [1, 2, 4, 8].contains(&k) => (base, Some((reg(index)?, k))),
                _ => return bad("the scale of an indexed operand must be 1, 2, 4 or 8"),
            },
            _ => return bad("expected DISP(%BASE) or DISP(%BASE,%INDEX,SCALE)"),
        };
        let offset = match disp {
            "" => 0,
            d => match d.strip_prefix('-') {
                Some(neg) => parse_int(neg).map(i64::wrapping_neg),
                None => parse_int(d),
            }
            .ok_or_else(|| format!("USDT argument `{spec}`: displacement `{d}` is not a number"))?,
        };
        UsdtOperand::Mem { base: reg(inner)?, index, offset }
    } else {
        return bad("expected %REG, $CONST or DISP(%REG)");
    };
    Ok(UsdtArg { size: size.unsigned_abs() as u8, signed: size < 0, operand, spec: spec.to_string() })
}

fn parse_int(s: &str) -> Option<i64> {
    match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
        None => s.parse::<u64>().ok().map(|v| v as i64),
    }
}

/// Parses a whole spec: its operands, separated by spaces.
pub fn parse_args(spec: &str) -> Result<Vec<UsdtArg>, String> {
    spec.split_whitespace().map(parse_arg).collect()
}

/// The argument specs of a probe's sites, deduplicated: `variants[i]` is the
/// operand list of the sites whose attach cookie is `i`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UsdtSpecs {
    /// Distinct argument lists, in order of first appearance.
    pub variants: Vec<Vec<UsdtArg>>,
    /// Arguments every site has (the probe's columns `arg0`…).
    pub args: usize,
}

impl UsdtSpecs {
    /// The variants of `sites` and, per site, its variant index (its cookie).
    pub fn of(sites: &[UsdtSite]) -> Result<(UsdtSpecs, Vec<u64>), String> {
        let mut variants: Vec<Vec<UsdtArg>> = vec![];
        let mut cookies = vec![];
        for s in sites {
            let args = parse_args(&s.args)?;
            let i = match variants.iter().position(|v| *v == args) {
                Some(i) => i,
                None => {
                    variants.push(args);
                    variants.len() - 1
                }
            };
            cookies.push(i as u64);
        }
        let args = variants.iter().map(Vec::len).min().unwrap_or(0);
        Ok((UsdtSpecs { variants, args }, cookies))
    }

    /// Is argument `i` signed at any site?
    pub fn signed(&self, i: usize) -> bool {
        self.variants.iter().any(|v| v.get(i).is_some_and(|a| a.signed))
    }

    /// The probe's columns: `arg0`… as `s64` or `u64`, in 8-byte slots.
    pub fn format(&self, provider: &str, name: &str) -> TracepointFormat {
        let fields = (0..self.args)
            .map(|i| {
                let signed = self.signed(i);
                TpField {
                    name: format!("arg{i}"),
                    c_type: (if signed { "s64" } else { "u64" }).into(),
                    offset: i as u32 * 8,
                    size: 8,
                    signed,
                    kind: FieldKind::Int,
                }
            })
            .collect();
        TracepointFormat { category: provider.into(), name: name.into(), id: 0, fields }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_specs() {
        let a = parse_arg("-4@%esi").unwrap();
        assert_eq!((a.size, a.signed, a.operand), (4, true, UsdtOperand::Reg("rsi")));
        let a = parse_arg("8@-16(%rbp)").unwrap();
        assert_eq!(
            (a.size, a.signed, a.operand),
            (8, false, UsdtOperand::Mem { base: "rbp", index: None, offset: -16 })
        );
        assert_eq!(parse_arg("4@(%r12)").unwrap().operand, UsdtOperand::Mem { base: "r12", index: None, offset: 0 });
        assert_eq!(
            parse_arg("-4@12(%rdi)").unwrap().operand,
            UsdtOperand::Mem { base: "rdi", index: None, offset: 12 }
        );
        assert_eq!(parse_arg("-4@$5").unwrap().operand, UsdtOperand::Const(5));
        assert_eq!(parse_arg("-4@$-7").unwrap().operand, UsdtOperand::Const(-7));
        assert_eq!(parse_arg("-4@%r14d").unwrap().operand, UsdtOperand::Reg("r14"));
        assert_eq!(parse_arg("1@%sil").unwrap().operand, UsdtOperand::Reg("rsi"));
        assert_eq!(parse_arg("2@%r9w").unwrap().operand, UsdtOperand::Reg("r9"));
        assert_eq!(parse_arg("8@%rax").unwrap().size, 8);
        assert_eq!(
            parse_arg("8@0(%r13,%rax,8)").unwrap().operand,
            UsdtOperand::Mem { base: "r13", index: Some(("rax", 8)), offset: 0 }
        );
        assert_eq!(
            parse_arg("8@0x10(%rsp)").unwrap().operand,
            UsdtOperand::Mem { base: "rsp", index: None, offset: 16 }
        );
        for (bad, why) in [
            ("4%eax", "SIZE@OPERAND"),
            ("3@%eax", "±1, 2, 4 or 8"),
            ("4@%ah", "not one ebq reads"),
            ("8@8(%rax,%rbx,3)", "scale"),
            ("8@8(%rax,%rbx)", "expected DISP"),
            ("8@$sym", "constant"),
            ("8@foo", "expected"),
        ] {
            let e = parse_arg(bad).unwrap_err();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn sites_share_variants_and_columns_take_the_union() {
        let site = |args: &str| UsdtSite {
            provider: "p".into(),
            name: "n".into(),
            offset: 0,
            semaphore: 0,
            args: args.into(),
        };
        let (specs, cookies) =
            UsdtSpecs::of(&[site("4@%edi 8@%rsi"), site("-4@%eax 8@8(%rbp)"), site("4@%edi 8@%rsi")]).unwrap();
        assert_eq!(cookies, vec![0, 1, 0]);
        assert_eq!((specs.variants.len(), specs.args), (2, 2));
        let f = specs.format("p", "n");
        assert_eq!(
            f.fields.iter().map(|f| (f.name.as_str(), f.signed)).collect::<Vec<_>>(),
            [("arg0", true), ("arg1", false)]
        );
    }
}
