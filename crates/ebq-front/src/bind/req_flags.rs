//! `req_flags(cmd_flags)`: a block request's operation and flags as
//! libbpf-tools `biolatency -F` prints them (`Sync-Write`,
//! `NoMerge-Sync-Write`, `ReadAhead-Read`).
//!
//! The bit numbers and operation codes change between kernels (libbpf-tools
//! copies an old `blk_types.h`), so they are read from the bound kernel's BTF
//! (`enum req_op`, `enum req_flag_bits`) when the query binds and carried in
//! the plan; user space decodes with that table and reads no host file.

use crate::btf::{Btf, Kind, KindTag};

/// The flags `biolatency -F` names, in the order it prints them, by the
/// kernel's enumerator for their bit.
const FLAGS: [(&str, &str); 11] = [
    ("__REQ_NOWAIT", "NoWait"),
    ("__REQ_BACKGROUND", "Background"),
    ("__REQ_RAHEAD", "ReadAhead"),
    ("__REQ_PREFLUSH", "PreFlush"),
    ("__REQ_FUA", "FUA"),
    ("__REQ_INTEGRITY", "Integrity"),
    ("__REQ_IDLE", "Idle"),
    ("__REQ_NOMERGE", "NoMerge"),
    ("__REQ_PRIO", "Priority"),
    ("__REQ_META", "Metadata"),
    ("__REQ_SYNC", "Sync"),
];

/// A kernel's request operations and flag bits, for [`ReqFlagNames::name`].
#[derive(Clone, PartialEq, Eq)]
pub struct ReqFlagNames {
    /// `REQ_OP_MASK`: the low bits holding the operation (below the first flag bit).
    op_mask: u64,
    /// Operation code → name (`REQ_OP_WRITE_ZEROES` → `WriteZeroes`).
    ops: Vec<(u64, String)>,
    /// Flag bit → label, in print order.
    flags: Vec<(u64, &'static str)>,
}

impl std::fmt::Debug for ReqFlagNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReqFlagNames({} ops, {} flags)", self.ops.len(), self.flags.len())
    }
}

impl ReqFlagNames {
    /// The table of the kernel whose BTF is `btf`, or why there is none.
    pub fn from_btf(btf: &Btf) -> Result<ReqFlagNames, String> {
        let enumerators = |name: &str| -> Result<Vec<(String, u64)>, String> {
            let id = btf.find(name, KindTag::Enum).ok_or_else(|| format!("the kernel's BTF has no enum {name}"))?;
            let Kind::Enum(e) = btf.kind(id) else { unreachable!("found as an enum") };
            Ok(btf.enum_values(e).iter().map(|v| (btf.name(v).to_string(), v.value)).collect())
        };
        let bits = enumerators("req_flag_bits")?;
        let bit = |name: &str| bits.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let first = bit("__REQ_FAILFAST_DEV").ok_or("enum req_flag_bits has no __REQ_FAILFAST_DEV")?;
        let ops = enumerators("req_op")?
            .into_iter()
            .filter(|(n, _)| n != "REQ_OP_LAST")
            .map(|(n, v)| (v, camel_case(n.trim_start_matches("REQ_OP_"))))
            .collect();
        let flags = FLAGS.iter().filter_map(|(name, label)| Some((bit(name)?, *label))).collect();
        Ok(ReqFlagNames { op_mask: (1u64 << first.min(63)) - 1, ops, flags })
    }

    /// `cmd_flags` as `biolatency -F` prints it: each set flag and `-`, then
    /// the operation (`Unknown` for a code the kernel does not name).
    pub fn name(&self, cmd_flags: u64) -> String {
        let mut s: String =
            self.flags.iter().filter(|(b, _)| cmd_flags >> b & 1 == 1).map(|(_, l)| format!("{l}-")).collect();
        let op = cmd_flags & self.op_mask;
        s.push_str(self.ops.iter().find(|(v, _)| *v == op).map_or("Unknown", |(_, n)| n.as_str()));
        s
    }
}

/// `WRITE_ZEROES` → `WriteZeroes`.
fn camel_case(upper: &str) -> String {
    upper
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or(String::new(), |f| f.to_string() + &c.as_str().to_ascii_lowercase())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kernel's (6.18) values, as `bpftool btf dump` prints them.
    fn names() -> ReqFlagNames {
        ReqFlagNames {
            op_mask: 0xff,
            ops: [(0, "READ"), (1, "WRITE"), (2, "FLUSH"), (3, "DISCARD"), (5, "SECURE_ERASE"), (9, "WRITE_ZEROES")]
                .into_iter()
                .map(|(v, n)| (v, camel_case(n)))
                .collect(),
            flags: FLAGS.iter().zip([21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11]).map(|((_, l), b)| (b, *l)).collect(),
        }
    }

    #[test]
    fn operations_and_flags_read_as_biolatency_prints_them() {
        let n = names();
        assert_eq!(n.name(1), "Write");
        assert_eq!(n.name(1 | 1 << 11), "Sync-Write");
        assert_eq!(n.name(1 | 1 << 11 | 1 << 14), "NoMerge-Sync-Write");
        assert_eq!(n.name(1 << 19), "ReadAhead-Read");
        assert_eq!(n.name(9 | 1 << 17 | 1 << 18), "PreFlush-FUA-WriteZeroes");
        assert_eq!(n.name(5), "SecureErase");
        assert_eq!(n.name(4), "Unknown", "no operation 4 on this kernel");
        // Bits the tool does not name (FAILFAST, POLLED, …) are left out.
        assert_eq!(n.name(2 | 1 << 8 | 1 << 22), "Flush");
    }
}
