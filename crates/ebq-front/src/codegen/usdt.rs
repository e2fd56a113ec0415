//! Code for USDT events: one function per argument column that reads the
//! argument as the probe site's spec says (register, user memory, constant),
//! at its size, sign- or zero-extended to 64 bits.
//!
//! The same program is attached to every site of the probe; when the sites'
//! specs differ, each site's attach cookie (`bpf_get_attach_cookie`) is the
//! index of its spec and the function switches on it. This is the decoding
//! libbpf's `usdt.bpf.h` does at run time from a spec map, written out here as
//! C so EXPLAIN shows it.

use crate::bind::{BoundEvent, EventSource};
use crate::catalog::usdt::{UsdtArg, UsdtOperand};

/// The C expression reading column `arg{i}` of `event`.
pub fn column_expr(event: &BoundEvent, i: usize) -> String {
    format!("{}_arg{i}(ctx)", prefix(event))
}

/// The argument functions' prefix, one per probe (`ebq_usdt_postgresql_smgr__md__read__start`):
/// a JOIN of two probes has both sets in one object.
fn prefix(event: &BoundEvent) -> String {
    let EventSource::Usdt { provider, name, .. } = &event.source else { unreachable!("USDT events only") };
    let ident: String =
        format!("{provider}_{name}").chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("ebq_usdt_{ident}")
}

/// The comment, includes and argument functions a USDT program starts with.
pub fn preamble(event: &BoundEvent) -> String {
    let EventSource::Usdt { path, sites, specs, .. } = &event.source else {
        unreachable!("usdt::preamble takes USDT events")
    };
    let mut out = format!(
        "/* {}: {} site(s) in {}; arguments decoded from each site's USDT spec. */\n#include <asm/ptrace.h>\n\n",
        event.event_description(),
        sites.len(),
        path.display()
    );
    // Guarded: a JOIN of a probe with itself emits its preamble twice.
    let prefix = prefix(event);
    let guard = prefix.to_uppercase();
    out.push_str(&format!("#ifndef {guard}\n#define {guard}\n"));
    for i in 0..specs.args {
        out.push_str(&format!(
            "static __always_inline __attribute__((unused)) __u64 {prefix}_arg{i}(struct pt_regs *ctx)\n{{\n"
        ));
        if specs.variants.len() == 1 {
            out.push_str(&format!("\t/* {} */\n", specs.variants[0][i].spec));
            out.push_str(&read(&specs.variants[0][i], "\treturn "));
        } else {
            out.push_str("\tswitch (bpf_get_attach_cookie(ctx)) {\n");
            for (cookie, v) in specs.variants.iter().enumerate() {
                out.push_str(&format!("\tcase {cookie}: /* {} */\n", v[i].spec));
                out.push_str(&read(&v[i], "\t\treturn "));
            }
            out.push_str("\t}\n\treturn 0;\n");
        }
        out.push_str("}\n\n");
    }
    out.push_str(&format!("#endif /* {guard} */\n\n"));
    out
}

/// Statements that `ret` (`"\treturn "`) the argument's 64-bit value.
fn read(arg: &UsdtArg, ret: &str) -> String {
    let ty = format!("__{}{}", if arg.signed { 's' } else { 'u' }, arg.size * 8);
    // Through the argument's own C type: a narrower register or memory value is
    // cut to its size and extended by its sign.
    let cast = |v: &str| format!("(__u64)(__s64)({ty})({v})");
    let cast = |v: &str| if arg.signed { cast(v) } else { format!("(__u64)({ty})({v})") };
    match &arg.operand {
        UsdtOperand::Const(c) => format!("{ret}{};\n", cast(&format!("{c}LL"))),
        UsdtOperand::Reg(r) => format!("{ret}{};\n", cast(&format!("ctx->{r}"))),
        UsdtOperand::Mem { base, index, offset } => {
            let indent = &ret[..ret.len() - ret.trim_start().len()];
            let index = index.map(|(r, k)| format!(" + ctx->{r} * {k}")).unwrap_or_default();
            format!(
                "{indent}{{\n{indent}\t{ty} v = 0;\n{indent}\tbpf_probe_read_user(&v, sizeof(v), (const void *)(ctx->{base}{index} + ({offset}LL)));\n{indent}\t{ret_in}{};\n{indent}}}\n",
                cast("v"),
                ret_in = ret.trim_start(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::usdt::parse_arg;
    use crate::codegen::tests::generate_for;

    const PG: &str = "usdt:/usr/lib/postgresql/15/bin/postgres";

    #[test]
    fn start_and_done_pair_like_enter_and_exit() {
        let c = generate_for(&format!(
            "SELECT s.arg4 AS rel, COUNT(*), SUM(d.arg6), HIST(d.time - s.time) FROM {PG}:postgresql:smgr__md__read__start s \
             JOIN {PG}:smgr__md__read__done d ON s.tid = d.tid GROUP BY s.arg4"
        ));
        assert_eq!(c.matches("SEC(\"uprobe\")").count(), 2, "{c}");
        // Each probe's argument functions under its own name (clang rejects a redefinition).
        assert_eq!(c.matches("__u64 ebq_usdt_postgresql_smgr__md__read__start_arg4(").count(), 1, "{c}");
        assert_eq!(c.matches("__u64 ebq_usdt_postgresql_smgr__md__read__done_arg6(").count(), 1, "{c}");
        assert!(c.contains("bpf_probe_read_user(&v, sizeof(v), (const void *)(ctx->rdi + (8LL)));"), "{c}");
        assert!(c.contains("return (__u64)(__s64)(__s32)(ctx->rax);"), "{c}");
    }

    #[test]
    fn sites_with_different_specs_switch_on_the_cookie() {
        let c = generate_for(&format!("SELECT COUNT(*), SUM(arg0) FROM {PG}:checkpoint__start"));
        assert!(c.contains("switch (bpf_get_attach_cookie(ctx)) {\n\tcase 0: /* -4@%ebx */"), "{c}");
        assert!(c.contains("case 1: /* 8@-16(%rbp) */"), "{c}");
    }

    #[test]
    fn operands_become_reads_of_their_size_and_sign() {
        assert_eq!(read(&parse_arg("-4@%esi").unwrap(), "\treturn "), "\treturn (__u64)(__s64)(__s32)(ctx->rsi);\n");
        assert_eq!(read(&parse_arg("8@%rax").unwrap(), "\treturn "), "\treturn (__u64)(__u64)(ctx->rax);\n");
        assert_eq!(read(&parse_arg("-4@$-5").unwrap(), "\treturn "), "\treturn (__u64)(__s64)(__s32)(-5LL);\n");
        let m = read(&parse_arg("-2@-16(%rbp)").unwrap(), "\treturn ");
        let x = read(&parse_arg("8@0(%r13,%rax,8)").unwrap(), "\treturn ");
        assert!(x.contains("(ctx->r13 + ctx->rax * 8 + (0LL))"), "{x}");
        assert!(
            m.contains("__s16 v = 0;")
                && m.contains("(ctx->rbp + (-16LL))")
                && m.contains("return (__u64)(__s64)(__s16)(v);"),
            "{m}"
        );
    }
}
