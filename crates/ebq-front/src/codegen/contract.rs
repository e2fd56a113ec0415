//! The codegen → runtime contract: what one generated BPF object holds, typed.
//!
//! [`generate`](super::generate) returns a [`Program`] per kernel program of
//! the plan: its C, its BPF programs with their attach points (in attach
//! order), its maps with their roles and layouts, and the layouts of the
//! shared structs. The runtime loads, attaches and reads the object through
//! this value alone: it never names a program or map itself.

use super::shared::{ConfigLayout, StatsLayout};
use crate::bind::BoundEvent;
use crate::plan::StructLayout;

/// One generated BPF object.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The BPF C.
    pub source: String,
    /// Its programs, in the order they must be attached.
    pub progs: Vec<ProgInfo>,
    /// Its maps, data sections included.
    pub maps: Vec<MapInfo>,
    /// The value of the [`MapRole::Stats`] map.
    pub stats: StatsLayout,
    /// The [`MapRole::Config`] section's variable.
    pub config: ConfigLayout,
    /// Row programs with per-CPU rings: the [`MapRole::Rows`] map is an
    /// ARRAY_OF_MAPS whose rings (one per possible CPU, this big) the runtime
    /// creates and inserts before attaching. `None`: one shared ring.
    pub row_rings: Option<super::RowRings>,
}

impl Program {
    /// The map with `role`, when the object has one.
    pub fn map(&self, role: MapRole) -> Option<&MapInfo> {
        self.maps.iter().find(|m| m.role == role)
    }

    /// The program that runs per event of the query (its run time is the query's).
    pub fn query_prog(&self) -> Option<&ProgInfo> {
        self.progs.iter().find(|p| matches!(p.attach, AttachPoint::Query(_)))
    }
}

/// One BPF program of the object.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgInfo {
    /// Its function name in the C (and in the object).
    pub name: &'static str,
    /// Where it attaches.
    pub attach: AttachPoint,
}

/// Where a program attaches, and when.
#[derive(Debug, Clone, PartialEq)]
pub enum AttachPoint {
    /// The query's event (a JOIN's end event): always.
    Query(BoundEvent),
    /// A JOIN's start event: always, after the end program (a pair opened
    /// before its end is attached could never close).
    PairStart(BoundEvent),
    /// A scheduler tracepoint that maintains the `-c` process set
    /// (`tracepoint:sched:…`): only when the scope tracks processes.
    ProcessTracking(&'static str),
    /// A fault tracepoint (`CATEGORY:NAME`, as `tp_btf`) where the process's
    /// file pages are counted for `pages_mapped` (`codegen::mapped_pages`):
    /// always, before the query's programs.
    FaultCount(&'static str),
}

impl AttachPoint {
    /// The event as users name it, for errors.
    pub fn describe(&self) -> String {
        match self {
            AttachPoint::Query(e) | AttachPoint::PairStart(e) => e.event_description(),
            AttachPoint::ProcessTracking(tp) => (*tp).to_string(),
            AttachPoint::FaultCount(tp) => format!("tp_btf:{tp}"),
        }
    }
}

/// One map of the object.
#[derive(Debug, Clone, PartialEq)]
pub struct MapInfo {
    /// Its name in the C; a data section's (`.bss`, `.rodata`) is the
    /// section name, which libbpf prefixes with part of the object's name.
    pub name: std::borrow::Cow<'static, str>,
    /// What it is for.
    pub role: MapRole,
    /// Its key.
    pub key: Layout,
    /// Its value (per CPU for per-CPU maps).
    pub value: Layout,
}

impl MapInfo {
    /// True when the loaded map called `loaded` is this one.
    pub fn is(&self, loaded: &str) -> bool {
        if self.name.starts_with('.') {
            loaded.ends_with(&*self.name)
        } else {
            loaded == self.name
        }
    }
}

/// What a map is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapRole {
    /// Per-CPU event accounting (`struct ebq_stats`).
    Stats,
    /// The `-c` process set, filled by the loader and the fork follower.
    TrackedPids,
    /// Per-CPU aggregates by (window, group), or the one slot of a keyless aggregate.
    Groups,
    /// The all-zero value new groups are copied from.
    ZeroValue,
    /// Quantile sketch counts by (window, group, argument, bucket).
    Sketch,
    /// Call stacks by id (kstack, ustack).
    Stacks,
    /// The ring buffer of a row query's records.
    Rows,
    /// A kernel fold's per-CPU `struct ebq_row`, built there instead of in a ring (`plan::row_fold`).
    FoldRow,
    /// A map a kernel fold's C declares and user space reads after the run.
    Fold,
    /// JOIN: open pairs by pairing key.
    Pending,
    /// JOIN of system-call events on the thread: each thread's open pair, in
    /// its task storage (`plan::pairing::per_thread`); never read by user space.
    ThreadPairs,
    /// JOIN: the end program's per-CPU copy of its pair.
    Taken,
    /// JOIN: the start programs' per-CPU pair under construction, a slot each.
    Opening,
    /// File columns: per-CPU scratch for path walks.
    PathScratch,
    /// The `retry` column at filemap faults: each thread's last faulting page.
    LastFault,
    /// `pages_mapped`: each thread's last count of its process's file pages.
    FileCount,
    /// `pages_mapped`: a per-CPU map whose addresses give the CPUs' per-CPU offsets.
    CpuOffsets,
    /// `pages_mapped` at `kmem:rss_stat`: how deep in the RCU read lock fault-around runs.
    AroundDepth,
    /// String columns: per-CPU scratch instead of the stack (`codegen::strings`).
    StringScratch,
    /// `user_strlen()`: per-CPU scratch the string is read into to be measured (`codegen::user_strlen`).
    StrlenScratch,
    /// `env_int()`: per-CPU scratch each environment variable's head is read into (`codegen::env_int`).
    EnvScratch,
    /// Names late: (kind, identity) → name, per CPU (`plan::late_names`).
    Names,
    /// Expanding events: the per-CPU record of the element being run (`codegen::expand`).
    Elements,
    /// `.bss`: the window number (time windows) or event sequence (count windows).
    WindowCounter,
    /// `.rodata`: `struct ebq_config`.
    Config,
}

/// A key or value layout.
#[derive(Debug, Clone, PartialEq)]
pub enum Layout {
    /// No key or value (ring buffers).
    None,
    /// `__u8`.
    U8,
    /// `__u32` (array index, pid, stack id).
    U32,
    /// `__u64` (sketch counts, the window counter).
    U64,
    /// `__u64[n]`: stack frames.
    Frames(u32),
    /// A struct the planner laid out.
    Struct(StructLayout),
    /// A struct generated without a planner layout (`struct ebq_sketch_key`,
    /// scratch), by size.
    Bytes(u32),
    /// `struct ebq_stats`.
    Stats,
    /// `struct ebq_config`.
    Config,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::plan::{plan, PlanOptions};

    fn programs(sql: &str) -> Vec<Program> {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        super::super::generate(&plan(sql, &l, &cat, &PlanOptions::default()).unwrap())
    }

    /// The names after `} ` of `… SEC(".maps");` lines, and the functions
    /// after `SEC("…")` lines: what the C declares.
    fn declared(source: &str) -> (Vec<String>, Vec<String>) {
        let lines: Vec<&str> = source.lines().collect();
        let maps = lines
            .iter()
            .filter_map(|l| l.strip_prefix("} ")?.strip_suffix(" SEC(\".maps\");").map(str::to_string))
            .collect();
        let progs = lines
            .windows(2)
            .filter(|w| w[0].starts_with("SEC(\"") && !w[0].contains("license"))
            .filter_map(|w| Some(w[1].strip_prefix("int ")?.split('(').next()?.to_string()))
            .collect();
        (maps, progs)
    }

    /// Every map and program the C declares is in the contract, and nothing else.
    #[test]
    fn the_contract_lists_what_the_source_declares() {
        let queries = [
            ("SELECT fd, COUNT(*), HIST(count), P99(count) FROM syscalls.sys_enter_pread64 GROUP BY fd WINDOW(time, 1000)", 1),
            ("SELECT COUNT(*), MAX(count) FROM syscalls.sys_enter_pread64", 1),
            ("SELECT kstack, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY kstack WINDOW(count, 100)", 1),
            ("SELECT time, pid, comm FROM syscalls.sys_enter_pread64", 1),
            (
                "SELECT e.fd, COUNT(*) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x \
                 ON e.tid = x.tid GROUP BY e.fd",
                1,
            ),
            (
                "SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
                 WHERE a.tid = b.tid WINDOW(time, 100)",
                2,
            ),
        ];
        for (sql, n) in queries {
            let programs = programs(sql);
            assert_eq!(programs.len(), n, "{sql}");
            for p in programs {
                let (maps, progs) = declared(&p.source);
                let mut named: Vec<&str> = p.maps.iter().map(|m| &*m.name).filter(|n| !n.starts_with('.')).collect();
                let mut declared: Vec<&str> = maps.iter().map(String::as_str).collect();
                named.sort_unstable();
                declared.sort_unstable();
                assert_eq!(named, declared, "{sql}");
                let named: Vec<&str> = p.progs.iter().map(|p| p.name).collect();
                assert_eq!(named, progs, "{sql}");
                assert!(matches!(p.progs[0].attach, AttachPoint::Query(_)), "{sql}: the query program attaches first");
                let counter = p.source.contains("__u64 ebq_window = 0;") || p.source.contains("__u64 ebq_seq = 0;");
                assert_eq!(p.map(MapRole::WindowCounter).is_some(), counter, "{sql}");
                assert!(p.map(MapRole::Config).is_some() && p.source.contains("const volatile struct ebq_config"));
            }
        }
    }

    #[test]
    fn a_join_start_program_attaches_after_the_end_program() {
        let p = programs(
            "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid",
        )
        .remove(0);
        let attach: Vec<String> = p.progs.iter().map(|p| p.attach.describe()).collect();
        assert_eq!(
            attach,
            [
                "tracepoint:syscalls:sys_exit_pread64",
                "tracepoint:syscalls:sys_enter_pread64",
                "tracepoint:sched:sched_process_fork",
                "tracepoint:sched:sched_process_exit"
            ]
        );
        assert_eq!(p.map(MapRole::ThreadPairs).map(|m| &*m.name), Some("ebq_pending"));
    }
}
