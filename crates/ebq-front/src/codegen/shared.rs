//! The structs the kernel and user space share, each defined once here:
//! `struct ebq_stats` (event accounting, read back per CPU), `struct
//! ebq_config` (the scope, written into `.rodata` before loading) and
//! `struct ebq_sketch_key` (a quantile sketch's map key). The BPF C, the pin
//! header and the runtime's encoder and decoders are all made from these
//! definitions, so they cannot drift apart.

use std::fmt::Write;

/// One `__u64` counter of `struct ebq_stats`, in field order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsField {
    /// Events in scope at the probe.
    Seen,
    /// Events that passed WHERE.
    Matched,
    /// Events lost: group map, ring buffer or stack map full.
    Dropped,
    /// JOIN: end events with no open pair.
    Unmatched,
    /// JOIN: start events lost to a full pairing map.
    PendingFull,
    /// `-c`: children not traced because `ebq_pids` was full.
    Untracked,
    /// JOIN: open pairs a later start on the same key replaced before their
    /// end came (last, so older readers of the pinned layout still fit).
    Superseded,
    /// JOIN with per-thread pairs: pairs opened minus pairs closed, per CPU
    /// (a pair may close on another CPU: only the sum over CPUs, wrapping,
    /// means anything); after detaching, the pairs left open.
    ThreadPairs,
    /// Events the scope (`-p`, `-c`, `--cgroup`) left out, counted only on
    /// the reject path (after `ThreadPairs`, so older readers still fit).
    OutOfScope,
    /// Strings read through a pointer that could not be read (user strings
    /// and `argv`: a page not resident at the event, a bad pointer; a kernel
    /// `char *` through BTF: NULL or stale); each is a NULL in its row or
    /// group key.
    UnreadableStrings,
    /// Chained JOIN: middle events that found no open pair on their key
    /// (ignored; last, so older readers still fit).
    MiddleUnmatched,
}

impl StatsField {
    /// Every field, in memory order.
    pub const ALL: [StatsField; 11] = [
        StatsField::Seen,
        StatsField::Matched,
        StatsField::Dropped,
        StatsField::Unmatched,
        StatsField::PendingFull,
        StatsField::Untracked,
        StatsField::Superseded,
        StatsField::ThreadPairs,
        StatsField::OutOfScope,
        StatsField::UnreadableStrings,
        StatsField::MiddleUnmatched,
    ];

    /// The C field name (`stats->NAME++` in the programs).
    pub fn c_name(self) -> &'static str {
        match self {
            StatsField::Seen => "seen",
            StatsField::Matched => "matched",
            StatsField::Dropped => "dropped",
            StatsField::Unmatched => "unmatched",
            StatsField::PendingFull => "pending_full",
            StatsField::Untracked => "untracked",
            StatsField::Superseded => "superseded",
            StatsField::ThreadPairs => "thread_pairs",
            StatsField::OutOfScope => "out_of_scope",
            StatsField::UnreadableStrings => "unreadable_strings",
            StatsField::MiddleUnmatched => "middle_unmatched",
        }
    }

    /// A trailing C comment for fields whose name does not say it all.
    fn c_comment(self) -> &'static str {
        match self {
            StatsField::Untracked => "\t/* -c: children not traced because ebq_pids was full */",
            StatsField::Superseded => "\t/* JOIN: open pairs a later start on their key replaced */",
            StatsField::ThreadPairs => "\t/* JOIN, pairs per thread: opened - closed (summed over CPUs) */",
            StatsField::OutOfScope => "\t/* events the scope (-p, -c, --cgroup) left out */",
            StatsField::UnreadableStrings => "\t/* user strings that could not be read: NULL */",
            StatsField::MiddleUnmatched => "\t/* chained JOIN: middle events with no open pair */",
            _ => "",
        }
    }

    /// Byte offset in `struct ebq_stats`.
    pub fn offset(self) -> usize {
        Self::ALL.iter().position(|f| *f == self).expect("ALL lists every field") * 8
    }
}

/// The value layout of the stats map: `struct ebq_stats`, one per CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StatsLayout;

impl StatsLayout {
    /// `struct ebq_stats { … };` followed by a blank line.
    pub fn c_struct(&self) -> String {
        let mut c = "struct ebq_stats {\n".to_string();
        for f in StatsField::ALL {
            let _ = writeln!(c, "\t__u64 {};{}", f.c_name(), f.c_comment());
        }
        c.push_str("};\n\n");
        c
    }

    /// Bytes per CPU.
    pub fn size(&self) -> usize {
        StatsField::ALL.len() * 8
    }

    /// Field `f` of one CPU's value (0 when the value is short).
    pub fn read(&self, value: &[u8], f: StatsField) -> u64 {
        let at = f.offset();
        value.get(at..at + 8).map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    }
}

/// Values of [`ConfigField::Scope`].
pub mod scope {
    /// Every process.
    pub const ALL: u32 = 0;
    /// Only threads of `ebq_config.target_tgid`.
    pub const PROCESS: u32 = 1;
    /// Processes in the `ebq_pids` set (a `-c` command and its descendants).
    pub const TRACKED: u32 = 2;
    /// Tasks in the cgroup `ebq_config.cgroup_id_*` or below it (`--cgroup`).
    pub const CGROUP: u32 = 3;
}

/// One `__u32` field of `struct ebq_config`, in field order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigField {
    /// Which processes the programs see ([`scope`]).
    Scope,
    /// With [`scope::PROCESS`], the process.
    TargetTgid,
    /// With [`scope::CGROUP`], the group's depth (the cgroup2 root is 0).
    CgroupLevel,
    /// With [`scope::CGROUP`], the low 32 bits of the group's id.
    CgroupIdLo,
    /// With [`scope::CGROUP`], the high 32 bits of the group's id.
    CgroupIdHi,
}

impl ConfigField {
    /// Every field, in memory order.
    pub const ALL: [ConfigField; 5] = [
        ConfigField::Scope,
        ConfigField::TargetTgid,
        ConfigField::CgroupLevel,
        ConfigField::CgroupIdLo,
        ConfigField::CgroupIdHi,
    ];

    fn c_name(self) -> &'static str {
        match self {
            ConfigField::Scope => "scope",
            ConfigField::TargetTgid => "target_tgid",
            ConfigField::CgroupLevel => "cgroup_level",
            ConfigField::CgroupIdLo => "cgroup_id_lo",
            ConfigField::CgroupIdHi => "cgroup_id_hi",
        }
    }

    fn c_comment(self) -> &'static str {
        match self {
            ConfigField::Scope => {
                "\t\t/* 0: all processes, 1: target_tgid only, 2: tgids in ebq_pids, 3: in cgroup_id_* */"
            }
            ConfigField::CgroupIdLo => "\t/* u32 halves: the struct stays all __u32 */",
            _ => "",
        }
    }
}

/// What the loader writes into `struct ebq_config` before loading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Config {
    /// [`ConfigField::Scope`].
    pub scope: u32,
    /// [`ConfigField::TargetTgid`].
    pub target_tgid: u32,
    /// [`ConfigField::CgroupLevel`].
    pub cgroup_level: u32,
    /// [`ConfigField::CgroupIdLo`] and [`ConfigField::CgroupIdHi`].
    pub cgroup_id: u64,
}

/// `struct ebq_config`, the read-only `ebq_config` variable: the only
/// variable of the object's `.rodata`, so it starts at [`Self::OFFSET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConfigLayout;

impl ConfigLayout {
    /// Offset of `ebq_config` in `.rodata`.
    pub const OFFSET: usize = 0;

    /// The struct and the variable, followed by a blank line.
    pub fn c_declaration(&self) -> String {
        let mut c = "struct ebq_config {\n".to_string();
        for f in ConfigField::ALL {
            let _ = writeln!(c, "\t__u32 {};{}", f.c_name(), f.c_comment());
        }
        c.push_str("};\nconst volatile struct ebq_config ebq_config = {};\n\n");
        c
    }

    /// `config` as the struct's bytes.
    pub fn encode(&self, config: &Config) -> Vec<u8> {
        ConfigField::ALL
            .iter()
            .flat_map(|f| {
                match f {
                    ConfigField::Scope => config.scope,
                    ConfigField::TargetTgid => config.target_tgid,
                    ConfigField::CgroupLevel => config.cgroup_level,
                    ConfigField::CgroupIdLo => config.cgroup_id as u32,
                    ConfigField::CgroupIdHi => (config.cgroup_id >> 32) as u32,
                }
                .to_ne_bytes()
            })
            .collect()
    }
}

/// `struct ebq_sketch_key`, the key of the quantile sketch map `ebq_sketch`:
/// the group's `struct ebq_key`, which sketched argument (`agg`, `__u32`),
/// and the bucket (`__s32`, [`crate::hist::sketch_index`]). The C (in the
/// programs and the pin header) asserts the offsets [`Self::decode`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchKeyLayout {
    /// Bytes of the group's key (planner layouts are multiples of 8, so
    /// `agg` follows it with no padding).
    pub group: u32,
}

impl SketchKeyLayout {
    /// Byte offset of `agg`.
    pub fn agg_offset(&self) -> usize {
        self.group as usize
    }

    /// Byte offset of `bucket`.
    pub fn bucket_offset(&self) -> usize {
        self.agg_offset() + 4
    }

    /// Bytes of the key.
    pub fn size(&self) -> u32 {
        self.group + 8
    }

    /// The struct and the assertions of its layout, followed by a blank line.
    pub fn c_struct(&self) -> String {
        format!(
            "struct ebq_sketch_key {{\n\tstruct ebq_key group;\n\t__u32 agg;\t/* which argument */\n\
             \t__s32 bucket;\t/* ebq_sketch_index */\n}};\n\
             _Static_assert(sizeof(struct ebq_sketch_key) == {}, \"ebq_sketch_key layout\");\n\
             _Static_assert(__builtin_offsetof(struct ebq_sketch_key, agg) == {}, \"ebq_sketch_key layout\");\n\
             _Static_assert(__builtin_offsetof(struct ebq_sketch_key, bucket) == {}, \"ebq_sketch_key layout\");\n\n",
            self.size(),
            self.agg_offset(),
            self.bucket_offset()
        )
    }

    /// A key read from the map: (the group's key bytes, agg, bucket); `None`
    /// when it is shorter than the layout.
    pub fn decode<'k>(&self, key: &'k [u8]) -> Option<(&'k [u8], usize, i32)> {
        let (a, b) = (self.agg_offset(), self.bucket_offset());
        let agg = u32::from_ne_bytes(key.get(a..a + 4)?.try_into().expect("4 bytes"));
        let bucket = i32::from_ne_bytes(key.get(b..b + 4)?.try_into().expect("4 bytes"));
        Some((&key[..a], agg as usize, bucket))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_fields_are_consecutive_u64s() {
        let layout = StatsLayout;
        assert_eq!(layout.size(), 88);
        let mut value = vec![0u8; 88];
        value[40..48].copy_from_slice(&7u64.to_ne_bytes());
        value[48..56].copy_from_slice(&9u64.to_ne_bytes());
        value[56..64].copy_from_slice(&u64::MAX.to_ne_bytes());
        value[64..72].copy_from_slice(&340u64.to_ne_bytes());
        value[72..80].copy_from_slice(&3u64.to_ne_bytes());
        assert_eq!(layout.read(&value, StatsField::ThreadPairs), u64::MAX, "a CPU that closed a pair another opened");
        assert_eq!(layout.read(&value, StatsField::Untracked), 7);
        assert_eq!(layout.read(&value, StatsField::Superseded), 9);
        assert_eq!(layout.read(&value, StatsField::OutOfScope), 340);
        assert_eq!(layout.read(&value, StatsField::UnreadableStrings), 3);
        assert_eq!(layout.read(&value, StatsField::Seen), 0);
        assert_eq!(layout.read(&value[..64], StatsField::OutOfScope), 0, "an older, shorter value");
        assert_eq!(layout.read(&value[..72], StatsField::UnreadableStrings), 0, "an older, shorter value");
        assert!(layout.c_struct().ends_with("\t__u64 untracked;\t/* -c: children not traced because ebq_pids was full */\n\t__u64 superseded;\t/* JOIN: open pairs a later start on their key replaced */\n\t__u64 thread_pairs;\t/* JOIN, pairs per thread: opened - closed (summed over CPUs) */\n\t__u64 out_of_scope;\t/* events the scope (-p, -c, --cgroup) left out */\n\t__u64 unreadable_strings;\t/* user strings that could not be read: NULL */\n\t__u64 middle_unmatched;\t/* chained JOIN: middle events with no open pair */\n};\n\n"));
    }

    #[test]
    fn config_encodes_in_field_order() {
        let bytes = ConfigLayout.encode(&Config { scope: scope::PROCESS, target_tgid: 42, ..Default::default() });
        assert_eq!(bytes, [1u32, 42, 0, 0, 0].map(u32::to_ne_bytes).concat());
        let c = Config { scope: scope::CGROUP, cgroup_level: 2, cgroup_id: 0x5_0000_0007, ..Default::default() };
        assert_eq!(ConfigLayout.encode(&c), [3u32, 0, 2, 7, 5].map(u32::to_ne_bytes).concat());
    }

    #[test]
    fn a_sketch_key_is_the_group_then_agg_then_bucket() {
        let layout = SketchKeyLayout { group: 16 };
        let mut key = vec![7u8; 16];
        key.extend(3u32.to_ne_bytes());
        key.extend((-5i32).to_ne_bytes());
        assert_eq!(layout.decode(&key), Some((&[7u8; 16][..], 3, -5)));
        assert_eq!(layout.decode(&key[..23]), None);
        assert_eq!(layout.size(), 24);
        assert!(layout.c_struct().contains("__builtin_offsetof(struct ebq_sketch_key, bucket) == 20,"));
    }
}
