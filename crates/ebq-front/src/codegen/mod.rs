//! Codegen: [`PhysicalPlan`] → readable BPF C.
//!
//! The program for one event is straight-line code: scope check, stats,
//! columns read by WHERE, WHERE, the other columns, then either one lookup in
//! the per-CPU group map (all aggregates of a group share one value struct) or
//! one ring-buffer record. Layouts come from tracefs and the planner, never
//! from hand-written kernel structs.

mod btf_args;
mod contract;
mod expand;
mod expr;
mod file;
mod hist;
mod late_names;
mod like;
mod mapped_pages;
mod pairing;
mod pin_header;
mod probe;
mod raw_syscall;
mod rings;
mod row_fold;
mod shared;
mod single_slot;
mod stacks;
pub use stacks::EMPTY_STACK_ID;
mod env_int;
mod stages;
mod strings;
mod structs;
mod usdt;
mod user_str;
mod user_strlen;

use crate::bind::{AggFunc, ColumnSource, ScalarExpr};
use crate::catalog::file_columns::RawFile;
use crate::catalog::{FieldKind, FileColumn, SystemColumn};
use crate::plan::{KernelOutput, KernelPlan, KernelWindow, PhysicalPlan, StructLayout};
use crate::types::DataType;
use std::fmt::Write;

pub use contract::{AttachPoint, Layout, MapInfo, MapRole, ProgInfo, Program};
pub use expr::c_expr;
pub use pin_header::{pin_header, pin_names, LAYOUT_VERSION};
pub use rings::RowRings;
pub use shared::{scope, Config, ConfigLayout, SketchKeyLayout, StatsField, StatsLayout};

/// Generates one BPF object per kernel program of `plan`, with the contract
/// the runtime loads it by.
pub fn generate(plan: &PhysicalPlan) -> Vec<Program> {
    plan.programs.iter().map(|k| generate_program(&plan.sql, k)).collect()
}

/// Names of the generated programs (functions) and maps.
mod names {
    pub const QUERY: &str = "ebq_query";
    pub const PAIR_START: &str = "ebq_pair_start";
    /// A chained JOIN's middle program.
    pub const PAIR_MIDDLE: &str = "ebq_pair_middle";
    /// The start programs of a JOIN whose start side is a union, one per branch.
    pub const PAIR_STARTS: [&str; crate::bind::MAX_UNION_BRANCHES] = [
        "ebq_pair_start_0",
        "ebq_pair_start_1",
        "ebq_pair_start_2",
        "ebq_pair_start_3",
        "ebq_pair_start_4",
        "ebq_pair_start_5",
        "ebq_pair_start_6",
        "ebq_pair_start_7",
        "ebq_pair_start_8",
        "ebq_pair_start_9",
        "ebq_pair_start_10",
        "ebq_pair_start_11",
        "ebq_pair_start_12",
        "ebq_pair_start_13",
        "ebq_pair_start_14",
        "ebq_pair_start_15",
        "ebq_pair_start_16",
        "ebq_pair_start_17",
        "ebq_pair_start_18",
        "ebq_pair_start_19",
        "ebq_pair_start_20",
        "ebq_pair_start_21",
        "ebq_pair_start_22",
        "ebq_pair_start_23",
        "ebq_pair_start_24",
        "ebq_pair_start_25",
        "ebq_pair_start_26",
        "ebq_pair_start_27",
        "ebq_pair_start_28",
        "ebq_pair_start_29",
        "ebq_pair_start_30",
        "ebq_pair_start_31",
    ];
    /// The programs of a top-level union's second and later branches (the
    /// first is `ebq_query`); index 0 is unused.
    pub const QUERY_BRANCHES: [&str; crate::bind::MAX_UNION_BRANCHES] = [
        "ebq_query",
        "ebq_query_1",
        "ebq_query_2",
        "ebq_query_3",
        "ebq_query_4",
        "ebq_query_5",
        "ebq_query_6",
        "ebq_query_7",
        "ebq_query_8",
        "ebq_query_9",
        "ebq_query_10",
        "ebq_query_11",
        "ebq_query_12",
        "ebq_query_13",
        "ebq_query_14",
        "ebq_query_15",
        "ebq_query_16",
        "ebq_query_17",
        "ebq_query_18",
        "ebq_query_19",
        "ebq_query_20",
        "ebq_query_21",
        "ebq_query_22",
        "ebq_query_23",
        "ebq_query_24",
        "ebq_query_25",
        "ebq_query_26",
        "ebq_query_27",
        "ebq_query_28",
        "ebq_query_29",
        "ebq_query_30",
        "ebq_query_31",
    ];
    pub const FOLLOW_FORK: &str = "ebq_follow_fork";
    pub const FORGET_EXIT: &str = "ebq_forget_exit";
    pub const FORK_TRACEPOINT: &str = "tracepoint:sched:sched_process_fork";
    pub const EXIT_TRACEPOINT: &str = "tracepoint:sched:sched_process_exit";
}

/// The BPF C of kernel program `k` of the query `sql`, and its contract:
/// the head (events, helpers), file and window declarations, the output's
/// maps, the pairings' maps, then the programs, each step below.
fn generate_program(sql: &str, k: &KernelPlan) -> Program {
    let mut maps = vec![
        map_info(".rodata", MapRole::Config, Layout::None, Layout::Config),
        map_info("ebq_stats", MapRole::Stats, Layout::U32, Layout::Stats),
        map_info("ebq_pids", MapRole::TrackedPids, Layout::U32, Layout::U8),
    ];
    let mut c = String::new();
    let mut row_rings = None;
    // A union's branches are programs of this object too, each with its own event.
    let branches: Vec<(&KernelPlan, &str, String)> = std::iter::once((k, names::QUERY, "ebq_event".to_string()))
        .chain(
            k.branches
                .iter()
                .enumerate()
                .map(|(i, b)| (b, names::QUERY_BRANCHES[i + 1], format!("ebq_event_{}", i + 1))),
        )
        .collect();
    head(sql, k, &branches, &mut c, &mut maps);
    if k.reads_files() {
        file_declarations(k, &mut c, &mut maps);
    }
    window_declarations(k, &mut c, &mut maps);
    match &k.output {
        KernelOutput::Aggregate { .. } => aggregate_declarations(k, &mut c, &mut maps),
        KernelOutput::Rows { record, fold: Some(fold), .. } => {
            c.push_str(&structs::layout_struct("ebq_row", record));
            c.push_str(&row_fold::declarations(record, fold));
            maps.push(map_info(row_fold::ROW_MAP, MapRole::FoldRow, Layout::U32, Layout::Struct(record.clone())));
            for m in &fold.maps {
                maps.push(map_info(m.clone(), MapRole::Fold, Layout::None, Layout::None));
            }
        }
        KernelOutput::Rows { record, fields, ringbuf_bytes, wakeup_bytes, per_cpu_rings, .. } => {
            c.push_str(&structs::layout_struct("ebq_row", record));
            if *per_cpu_rings {
                c.push_str(&rings::declarations(*ringbuf_bytes));
                let time_offset = fields.iter().find_map(|(e, f)| {
                    let time = ColumnSource::System(SystemColumn::Time);
                    matches!(e, ScalarExpr::Column { source, .. } if *source == time).then(|| record.fields[*f].offset)
                });
                row_rings = Some(rings::RowRings { time_offset, ..rings::RowRings::new(*ringbuf_bytes) });
            } else {
                let _ = write!(
                    c,
                    "struct {{\n\t__uint(type, BPF_MAP_TYPE_RINGBUF);\n\t__uint(max_entries, {ringbuf_bytes});\n}} ebq_rows SEC(\".maps\");\n\n"
                );
            }
            let _ = write!(
                c,
                "/* Wake the reader only once this much is waiting; it also polls on a timer. */\n#define EBQ_WAKEUP_BYTES {wakeup_bytes}\n\n"
            );
            c.push_str(if *per_cpu_rings { rings::WAKEUP_FLAG } else { WAKEUP_FLAG });
            maps.push(map_info("ebq_rows", MapRole::Rows, Layout::None, Layout::Struct(record.clone())));
        }
    }
    let mut progs: Vec<ProgInfo> =
        if k.reads_pages_mapped() { mapped_pages::progs(k.finishes_faults()) } else { vec![] };
    progs.extend(branches.iter().map(|(b, name, _)| ProgInfo { name, attach: AttachPoint::Query(b.event.clone()) }));
    pairing_declarations(k, &mut c, &mut maps, &mut progs);
    programs(k, &branches, &mut c, &mut maps, &mut progs);
    Program { source: c, progs, maps, stats: StatsLayout, config: ConfigLayout, row_rings }
}

/// The object's head: the license and the query as a comment, each event's
/// record struct, the prelude (config, tracked pids, helpers) and the
/// scratch maps strings and expanding events need.
fn head(sql: &str, k: &KernelPlan, branches: &[(&KernelPlan, &str, String)], c: &mut String, maps: &mut Vec<MapInfo>) {
    let sql_comment: String = sql.lines().map(|l| format!(" *   {}\n", comment_safe(l))).collect();
    let files = k.reads_files();
    let header = if files || branches.iter().any(|(b, _, _)| btf_args::attaches_tp_btf(b)) {
        file::HEADER
    } else {
        "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n"
    };
    let _ = write!(
        c,
        "// SPDX-License-Identifier: GPL-2.0\n/*\n * Generated by ebq for:\n{sql_comment} */\n\
         {header}\nchar LICENSE[] SEC(\"license\") = \"GPL\";\n\n"
    );
    for (b, _, record) in branches {
        match probe::preamble(&b.event) {
            Some(decls) => c.push_str(&decls),
            None => c.push_str(&structs::event_struct(record, &b.event.event_description(), &b.event.format)),
        }
    }
    if raw_syscall::any_raw(k.events()) {
        c.push_str(raw_syscall::HELPERS);
    }
    c.push_str(&prelude());
    c.push_str(&pids_map(k.max_tracked));
    c.push_str(PRELUDE_HELPERS);
    if let Some((decls, bytes)) = strings::declarations(k) {
        c.push_str(&decls);
        maps.push(map_info("ebq_strings", MapRole::StringScratch, Layout::U32, Layout::Bytes(bytes)));
    }
    if let Some(bytes) = expand::record_bytes(k.events()) {
        c.push_str(&expand::map(bytes));
        c.push_str(expand::REGS);
        maps.push(map_info(expand::ELEMENTS, MapRole::Elements, Layout::U32, Layout::Bytes(bytes)));
    }
}

/// File columns' helpers and scratch maps (and the page counts and fault
/// finishes of `pages_mapped`), declared before the programs that call them.
fn file_declarations(k: &KernelPlan, c: &mut String, maps: &mut Vec<MapInfo>) {
    let reads_pages_mapped = k.reads_pages_mapped();
    let finishes_faults = k.finishes_faults();
    c.push_str(if k.typed_files { file::PRELUDE_TYPED } else { file::PRELUDE });
    if k.events().any(|e| crate::catalog::file_columns::request_field(&e.format).is_some()) {
        c.push_str(if k.typed_files { file::REQUEST_TYPED } else { file::REQUEST });
    }
    // A fault's finish reads its file as a filemap fault does, from the fault's mapping.
    let uses = |how: RawFile, h: RawFile| h == how || (how, h) == (RawFile::Mapping, RawFile::Fault);
    for how in [RawFile::Kiocb, RawFile::Mapping] {
        if k.events().any(|e| crate::catalog::file_columns::raw_file_arg(&e.format).is_some_and(|(_, h)| uses(how, h)))
        {
            c.push_str(file::raw_file_prelude(how, k.typed_files));
        }
    }
    c.push_str(file::MOUNT_POINT);
    maps.push(map_info("ebq_path_scratch", MapRole::PathScratch, Layout::U32, Layout::Bytes(256)));
    // Before the retry column's helper, which asks it.
    if reads_pages_mapped {
        if finishes_faults {
            let _ = write!(
                c,
                "/* The fault's start keeps its RCU read-lock nesting: a finish holds {} level(s) more, fault-around one more \
                 again. */\n#define EBQ_FINISH 1\n#define EBQ_FINISH_DEPTH {}\n\n",
                k.finish_depth, k.finish_depth
            );
        }
        c.push_str(mapped_pages::PRELUDE);
        maps.push(map_info("ebq_file_pages", MapRole::FileCount, Layout::U32, Layout::Bytes(88)));
        maps.push(map_info("ebq_cpu_offsets", MapRole::CpuOffsets, Layout::U32, Layout::U64));
    }
    if finishes_faults {
        c.push_str(mapped_pages::FINISH);
        maps.push(map_info("ebq_around_depth", MapRole::AroundDepth, Layout::U32, Layout::U32));
    }
    if k.reads_column(&|c| matches!(c, ColumnSource::File { column: FileColumn::Retry, .. })) {
        c.push_str(file::FAULT_RETRY);
        maps.push(map_info("ebq_last_fault", MapRole::LastFault, Layout::U32, Layout::Bytes(16)));
    }
}

/// The window counter user space advances (time windows) or the kernel
/// counts (count windows), in `.bss`.
fn window_declarations(k: &KernelPlan, c: &mut String, maps: &mut Vec<MapInfo>) {
    if let KernelWindow::Time { .. } = k.window {
        c.push_str(
            "/* Window number; ebq's user-space timer advances it at each boundary. */\n__u64 ebq_window = 0;\n\n",
        );
    }
    if let KernelWindow::Count { .. } = k.window {
        c.push_str("/* Matching events so far; window = ebq_seq / events per window. */\n__u64 ebq_seq = 0;\n\n");
    }
    if k.window != KernelWindow::None {
        maps.push(map_info(".bss", MapRole::WindowCounter, Layout::U32, Layout::U64));
    }
}

/// A group map's declarations: key and value structs, the map (one slot or
/// a per-CPU hash), late names, the zero value, sketches and the helpers its
/// aggregates call.
fn aggregate_declarations(k: &KernelPlan, c: &mut String, maps: &mut Vec<MapInfo>) {
    let KernelOutput::Aggregate {
        key,
        value,
        max_groups,
        slots,
        sketches,
        sketch_buckets,
        single_slot,
        value_on_stack,
        preallocated,
        late_names,
        ..
    } = &k.output
    else {
        return;
    };
    if !*single_slot || !sketches.is_empty() {
        c.push_str(&structs::layout_struct("ebq_key", key));
    }
    if let Some(late) = late_names {
        c.push_str(&late_names::declarations(late, *max_groups));
        let bytes = crate::plan::late_names::NAME_BYTES;
        maps.push(map_info(late_names::NAMES, MapRole::Names, Layout::Bytes(16), Layout::Bytes(bytes)));
    }
    c.push_str(&structs::layout_struct("ebq_value", value));
    let flags = if *preallocated {
        ""
    } else {
        "\t__uint(map_flags, BPF_F_NO_PREALLOC);\t/* too big to reserve: allocated as groups occur */\n"
    };
    let group_key = if *single_slot {
        c.push_str(single_slot::MAP);
        Layout::U32
    } else {
        let _ = write!(
            c,
            "/* One entry per (window, group); one value per CPU, merged by ebq. */\nstruct {{\n\
         \t__uint(type, BPF_MAP_TYPE_PERCPU_HASH);\n\t__uint(max_entries, {max_groups});\n{flags}\
         \t__type(key, struct ebq_key);\n\t__type(value, struct ebq_value);\n}} ebq_groups SEC(\".maps\");\n\n"
        );
        Layout::Struct(key.clone())
    };
    maps.push(map_info("ebq_groups", MapRole::Groups, group_key, Layout::Struct(value.clone())));
    // A single slot starts zeroed: no new values to copy from ebq_zero.
    let on_stack = *single_slot || *value_on_stack;
    if !on_stack {
        maps.push(map_info("ebq_zero", MapRole::ZeroValue, Layout::U32, Layout::Struct(value.clone())));
    }
    if !sketches.is_empty() {
        let sketch_key = SketchKeyLayout { group: key.size }.size();
        maps.push(map_info("ebq_sketch", MapRole::Sketch, Layout::Bytes(sketch_key), Layout::U64));
    }
    c.push_str(&hist::maps(on_stack, sketches, *sketch_buckets, key.size));
    if hist::needed(slots, sketches) {
        c.push_str(hist::HELPERS);
    }
    if slots.iter().any(|s| s.func == AggFunc::Hist(crate::hist::Log2::Ceil)) {
        c.push_str(hist::CEIL_HELPERS);
    }
    if !sketches.is_empty() {
        c.push_str(&hist::sketch_helpers());
    }
    let top_k = slots.iter().any(|s| matches!(s.func, AggFunc::ApproxTopK { .. }));
    if top_k || slots.iter().any(|s| s.func == AggFunc::ApproxCountDistinct) {
        c.push_str(crate::hll::C_HELPERS);
    }
    if top_k {
        c.push_str(&crate::topk::c_helpers());
    }
}

/// Each pairing's maps (pending starts, or one per thread) and its start
/// programs' contract entries.
fn pairing_declarations(k: &KernelPlan, c: &mut String, maps: &mut Vec<MapInfo>, progs: &mut Vec<ProgInfo>) {
    for p in k.pairings() {
        c.push_str(&pairing::declarations(p));
        let stash = Layout::Struct(p.stash.clone());
        let names = pairing::PairNames::of(p);
        if p.per_thread {
            let pair = Layout::Bytes(p.key.size.next_multiple_of(8) + p.stash.size);
            maps.push(map_info(names.pending, MapRole::ThreadPairs, Layout::U32, pair));
        } else {
            maps.push(map_info(names.pending, MapRole::Pending, Layout::Struct(p.key.clone()), stash.clone()));
            maps.push(map_info(names.opening, MapRole::Opening, Layout::U32, stash.clone()));
            if !p.carried.is_empty() {
                maps.push(map_info(names.taken, MapRole::Taken, Layout::U32, stash));
            }
        }
        for (i, start) in p.starts().into_iter().enumerate() {
            progs.push(ProgInfo { name: pairing::start_name(p, i), attach: AttachPoint::PairStart(start.start) });
        }
        if let Some(m) = &p.middle {
            progs.push(ProgInfo { name: names::PAIR_MIDDLE, attach: AttachPoint::PairStart(m.event.clone()) });
        }
    }
}

/// The programs: PPID and stack helpers, each branch's program (and its
/// expanding driver), pairings' starts, page counting, and the fork and exit
/// programs that track the process tree.
fn programs(
    k: &KernelPlan,
    branches: &[(&KernelPlan, &str, String)],
    c: &mut String,
    maps: &mut Vec<MapInfo>,
    progs: &mut Vec<ProgInfo>,
) {
    let reads_pages_mapped = k.reads_pages_mapped();
    let finishes_faults = k.finishes_faults();
    if k.reads_column(&|c| matches!(c, ColumnSource::System(SystemColumn::Ppid))) {
        c.push_str(PPID);
    }
    c.push_str(&like::functions(k));
    c.push_str(&user_strlen::functions(k, maps));
    c.push_str(&env_int::functions(k, maps));
    if k.reads_stacks() {
        c.push_str(&stacks::map());
        maps.push(map_info("ebq_stacks", MapRole::Stacks, Layout::U32, Layout::Frames(stacks::MAX_DEPTH)));
    }
    for (b, name, record) in branches {
        c.push_str(&program(b, name, record));
        c.push_str(&expand::driver(&b.event, name, record));
    }
    for p in k.pairings() {
        c.push_str(&pairing::start_programs(p));
        c.push_str(&pairing::middle_program(p));
    }
    if reads_pages_mapped {
        c.push_str(&mapped_pages::programs(finishes_faults));
    }
    for (tracking, name, tracepoint) in [
        (fork_program(k), names::FOLLOW_FORK, names::FORK_TRACEPOINT),
        (exit_program(k), names::FORGET_EXIT, names::EXIT_TRACEPOINT),
    ] {
        match tracking {
            Ok(text) => {
                c.push_str(&text);
                progs.push(ProgInfo { name, attach: AttachPoint::ProcessTracking(tracepoint) });
            }
            Err(comment) => c.push_str(comment),
        }
    }
}

fn map_info(name: impl Into<std::borrow::Cow<'static, str>>, role: MapRole, key: Layout, value: Layout) -> MapInfo {
    MapInfo { name: name.into(), role, key, value }
}

/// The wake-up decision of row programs (after the ring buffer map).
const WAKEUP_FLAG: &str = r#"/* A record's bytes in the ring buffer: the 8-byte header, rounded up to 8. */
#define EBQ_RECORD_BYTES(r) ((sizeof(r) + 8 + 7) & ~7ULL)

/* Wake the reader when the waiting data crosses a multiple of EBQ_WAKEUP_BYTES: once per
 * EBQ_WAKEUP_BYTES of rows, not on every row while the reader is behind (each wake-up costs
 * the traced thread about a microsecond; `ebq bench fidelity`). */
static __always_inline __u64 ebq_wakeup_flag(__u64 record_bytes)
{
	__u64 avail = bpf_ringbuf_query(&ebq_rows, BPF_RB_AVAIL_DATA);
	__u64 before = avail > record_bytes ? avail - record_bytes : 0;

	return avail / EBQ_WAKEUP_BYTES != before / EBQ_WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

"#;

/// The config and stats structs (defined in [`shared`]) and the stats map.
fn prelude() -> String {
    format!(
        "/* Set by ebq before loading; read-only, so the verifier drops unused branches. */\n{}\
         /* Events in scope, events that passed WHERE, events lost (group map or ring buffer full);\n \
         * for a JOIN also end events with no open pair, and starts lost to a full pairing map. */\n{}{STATS_MAP}",
        ConfigLayout.c_declaration(),
        StatsLayout.c_struct()
    )
}

/// A per-CPU array of one slot of C type `value`, named `name`: the scratch a
/// helper reads into when the value is too big for the 512-byte stack.
pub(crate) fn one_slot_per_cpu(name: &str, value: &str) -> String {
    format!(
        "struct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\
         \t__type(value, {value});\n}} {name} SEC(\".maps\");\n"
    )
}

const STATS_MAP: &str = r#"struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ebq_stats);
} ebq_stats SEC(".maps");

"#;

/// The `-c` process set, sized from the plan (`--max-tracked`).
fn pids_map(max_tracked: u32) -> String {
    format!(
        "/* Processes traced in scope 2: the -c command and its descendants. */\nstruct {{\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\
         \t__uint(max_entries, {max_tracked});\n\t__type(key, __u32);\n\t__type(value, __u8);\n}} ebq_pids SEC(\".maps\");\n"
    )
}

const PRELUDE_HELPERS: &str = r#"
static __always_inline int ebq_in_scope(__u32 tgid)
{
	if (ebq_config.scope == 0)
		return 1;
	if (ebq_config.scope == 1)
		return tgid == ebq_config.target_tgid;
	/* --cgroup: the current task's ancestor at the group's depth is the group
	 * (0 when the task's own cgroup is shallower). */
	if (ebq_config.scope == 3)
		return bpf_get_current_ancestor_cgroup_id(ebq_config.cgroup_level) ==
		       ((__u64)ebq_config.cgroup_id_hi << 32 | ebq_config.cgroup_id_lo);
	return bpf_map_lookup_elem(&ebq_pids, &tgid) != 0;
}

/* The same for a program that reads no pid: the helper runs only when a scope needs it
 * (with scope 0 the verifier drops the call, as ebq_config is read-only). */
static __always_inline int ebq_in_scope_now(void)
{
	return ebq_config.scope == 0 || ebq_in_scope(bpf_get_current_pid_tgid() >> 32);
}

/* An event the scope left out: counted (only here, off the path of events in scope), then the
 * program returns. */
static __always_inline int ebq_out_of_scope(void)
{
	__u32 zero = 0;
	struct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);

	if (stats)
		stats->out_of_scope++;
	return 0;
}

/* After a string's read into s (n: the return of bpf_probe_read_user_str, or of
 * bpf_probe_read_kernel_str for a kernel char *; a negative errno for execve's argv when one
 * of its reads failed): a readable string of one byte or more costs this one compare. An
 * empty one gets byte 1 = 0; one that could not be read (a page not resident at the event,
 * a bad or NULL pointer: the helper zeroed s) gets byte 1 = 1, the NULL user space decodes,
 * and is counted. */
static __always_inline void ebq_user_str_read(char *s, long n)
{
	__u32 zero = 0;
	struct ebq_stats *stats;

	if (n > 1)
		return;
	s[1] = n < 0;
	if (n >= 0)
		return;
	stats = bpf_map_lookup_elem(&ebq_stats, &zero);
	if (stats)
		stats->unreadable_strings++;
}

/* The current task's comm, read straight from task_struct: CO-RE relocates the field
 * offset from the kernel's BTF, and clang loads only the bytes the query uses, where
 * bpf_get_current_comm zeroes a buffer and strscpy_pads a copy into it (~7 ns per event,
 * bench/pervent-issue2.md). The kernel NUL-pads comm, as the helper does. */
struct task_struct___ebq {
	char comm[16] __attribute__((aligned(8)));
} __attribute__((preserve_access_index));

static __always_inline void ebq_current_comm(char out[16])
{
	struct task_struct___ebq *task = (void *)bpf_get_current_task_btf();

	__builtin_memcpy(out, task->comm, 16);
}

/* SQL arithmetic on BPF: x / 0 = 0 and x % 0 = x (as the BPF ISA defines), shifts past 63 give 0. */
static __always_inline __u64 ebq_udiv(__u64 a, __u64 b) { return b ? a / b : 0; }
static __always_inline __u64 ebq_umod(__u64 a, __u64 b) { return b ? a % b : a; }
static __always_inline __s64 ebq_sdiv(__s64 a, __s64 b)
{
	__u64 ua = a < 0 ? -(__u64)a : (__u64)a, ub = b < 0 ? -(__u64)b : (__u64)b;
	__u64 q = ebq_udiv(ua, ub);
	return (a < 0) != (b < 0) ? -(__s64)q : (__s64)q;
}
static __always_inline __s64 ebq_smod(__s64 a, __s64 b)
{
	__u64 ua = a < 0 ? -(__u64)a : (__u64)a, ub = b < 0 ? -(__u64)b : (__u64)b;
	__u64 r = ebq_umod(ua, ub);
	return a < 0 ? -(__s64)r : (__s64)r;
}
static __always_inline __u64 ebq_shl(__u64 a, __u64 b) { return b < 64 ? a << b : 0; }
static __always_inline __u64 ebq_lshr(__u64 a, __u64 b) { return b < 64 ? a >> b : 0; }
static __always_inline __s64 ebq_ashr(__s64 a, __u64 b) { return a >> (b < 63 ? b : 63); }

"#;

/// User text quoted inside a C comment: neither `*/` (ends it) nor `/*`
/// (clang's -Wcomment) may appear.
pub(crate) fn comment_safe(text: &str) -> String {
    text.replace("*/", "* /").replace("/*", "/ *")
}

/// The C name of a column's value: its local variable, or for a string in
/// the per-CPU scratch its field there (`strings->ev_filename`).
pub fn local_name(c: &ColumnSource) -> String {
    let plain = plain_local_name(c);
    if crate::plan::in_string_scratch(c) {
        format!("{}->{plain}", strings::POINTER)
    } else {
        plain
    }
}

/// The identifier a column's value is named by.
fn plain_local_name(c: &ColumnSource) -> String {
    let n: String = c.name().chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' }).collect();
    match c {
        ColumnSource::System(_) => format!("sys_{n}"),
        ColumnSource::Field { .. } => format!("ev_{n}"),
        ColumnSource::Start { column, .. } => format!("start_{}", plain_local_name(column)),
        ColumnSource::File { .. } => format!("fc_{n}"),
        ColumnSource::Arg(a) => btf_args::local_name(a),
        ColumnSource::Union { .. } => unreachable!("the planner replaces union columns in each branch's program"),
        ColumnSource::Middle { .. } => format!("mid_{n}"),
    }
}

/// WHERE in two steps when some of its AND-ed conditions read a string through a pointer
/// and others do not: the others first, then the strings and their conditions. An event a
/// cheap test rules out (`comm = 'x'`, `pid`, `fd`) never reads its strings: no probe read it
/// does not need, and a string that could not be read is counted only for an event that got
/// as far as needing it (glibc's `/proc/self/maps` at a workload's start was counted under
/// `WHERE comm = 'x' AND filename NOT LIKE '/proc/%'`). Otherwise one step, WHERE as written.
fn where_steps(f: &ScalarExpr) -> Vec<Vec<&ScalarExpr>> {
    fn conjuncts<'a>(e: &'a ScalarExpr, out: &mut Vec<&'a ScalarExpr>) {
        match e {
            ScalarExpr::Binary { op: crate::bind::BinaryOp::And, left, right, .. } => {
                conjuncts(left, out);
                conjuncts(right, out);
            }
            _ => out.push(e),
        }
    }
    let reads_string = |e: &ScalarExpr| {
        let mut cols = vec![];
        e.typed_columns(&mut cols);
        cols.into_iter().any(|(source, ty)| crate::plan::may_be_unreadable(&ScalarExpr::Column { source, ty }))
    };
    let mut all = vec![];
    conjuncts(f, &mut all);
    let (strings, cheap): (Vec<_>, Vec<_>) = all.into_iter().partition(|e| reads_string(e));
    if strings.is_empty() || cheap.is_empty() {
        return vec![vec![f]];
    }
    vec![cheap, strings]
}

/// Columns read by `exprs`, in first-use order, without repeats.
pub(crate) fn columns_of<'a>(
    exprs: impl IntoIterator<Item = &'a ScalarExpr>,
    skip: &[ColumnSource],
) -> Vec<(ColumnSource, DataType)> {
    let mut out: Vec<(ColumnSource, DataType)> = vec![];
    for e in exprs {
        e.typed_columns(&mut out);
    }
    let mut out = file::with_dependencies(out);
    out.retain(|(c, _)| !skip.contains(c));
    out
}

/// The `ppid` reader, emitted only in objects that read `ppid`.
const PPID: &str = r#"/* The current task's parent process, as `ps` shows it: real_parent (a ptrace
 * attach changes only `parent`), its tgid. CO-RE relocates both fields. */
struct task_struct___ebq_parent {
	struct task_struct___ebq_parent *real_parent;
	int tgid;
} __attribute__((preserve_access_index));

static __always_inline __u32 ebq_current_ppid(void)
{
	struct task_struct___ebq_parent *task = (void *)bpf_get_current_task_btf();

	return task->real_parent->tgid;
}

"#;

/// C statements declaring and loading one column into its local.
pub(crate) fn load_column(c: &ColumnSource, ty: DataType, event: &crate::bind::BoundEvent) -> String {
    let (local, format) = (local_name(c), &event.format);
    if let Some(arg) = probe::column_expr(event, c.name()).filter(|_| matches!(c, ColumnSource::Field { .. })) {
        return format!("\t{} {local} = {arg};\n", ty.c_type());
    }
    if let ColumnSource::Field { name, kind: FieldKind::UserArgv, .. } = c {
        return user_str::argv(&local, name, ty.byte_size());
    }
    if crate::plan::in_string_scratch(c) {
        // Not zeroed: comparisons stop at the NUL, and copies out of the scratch stop there too.
        return string_read(c, event, &local).expect("scratch strings are read in one call");
    }
    if let Some(read) = string_read(c, event, &local) {
        // comm, on the stack: 16 bytes, read whole (the kernel NUL-pads it).
        return format!("\tchar {local}[{}];\n{read}", ty.byte_size());
    }
    match c {
        ColumnSource::Start { .. } => {
            unreachable!("carried columns are read from the pairing map (pairing::load_carried)")
        }
        ColumnSource::Union { .. } => unreachable!("the planner replaces union columns in each branch's program"),
        ColumnSource::Middle { .. } => unreachable!("a middle accumulator is read carried, from the pair"),
        ColumnSource::System(s) => match s {
            SystemColumn::Time => format!("\t__u64 {local} = bpf_ktime_get_ns();\n"),
            SystemColumn::Pid => format!("\t__u32 {local} = pid_tgid >> 32;\n"),
            SystemColumn::Tid => format!("\t__u32 {local} = (__u32)pid_tgid;\n"),
            SystemColumn::Ppid => format!("\t__u32 {local} = ebq_current_ppid();\n"),
            SystemColumn::Uid => format!("\t__u32 {local} = (__u32)bpf_get_current_uid_gid();\n"),
            SystemColumn::Gid => format!("\t__u32 {local} = bpf_get_current_uid_gid() >> 32;\n"),
            SystemColumn::Cpu => format!("\t__u32 {local} = bpf_get_smp_processor_id();\n"),
            SystemColumn::Cgroup => format!("\t__u64 {local} = bpf_get_current_cgroup_id();\n"),
            SystemColumn::Comm => unreachable!("string_read reads comm"),
            SystemColumn::Kstack => stacks::load(&local, false),
            SystemColumn::Ustack => stacks::load(&local, true),
        },
        ColumnSource::Arg(a) => btf_args::load(a, ty, &local),
        ColumnSource::File { column, fd } => {
            let handle = file::dependency(c).map_or_else(|| local.clone(), |h| local_name(&h));
            let mapped = crate::catalog::file_columns::address_field(format) == Some(fd.as_str());
            let request = crate::catalog::file_columns::request_field(format) == Some(fd.as_str());
            let raw = crate::catalog::file_columns::raw_file_arg(format).filter(|(arg, _)| arg == fd);
            if let (FileColumn::Handle, Some((_, how))) = (*column, raw) {
                return file::load_raw(&local, how);
            }
            if raw.is_some_and(|(_, how)| how == RawFile::Fault) {
                return file::load_at_finish(*column, &local, &handle);
            }
            let fd = probe::column_expr(event, fd).unwrap_or_else(|| format!("ctx->{fd}"));
            match *column {
                FileColumn::Handle if mapped => return file::load_mapped(&local, &fd),
                FileColumn::Handle if request => return file::load_request(&local, &fd),
                _ => {}
            }
            file::load(*column, &fd, &local, &handle)
        }
        ColumnSource::Field { name, offset, size, kind } => match kind {
            FieldKind::Int if structs::in_struct(*offset, *size) && format.field(name).is_some() => {
                format!("\t{} {local} = ctx->{name};\n", ty.c_type())
            }
            FieldKind::Int => format!(
                "\t{} {local} = 0;\n\tbpf_probe_read_kernel(&{local}, {size}, (void *)ctx + {offset});\t/* {name} */\n",
                ty.c_type()
            ),
            FieldKind::CharArray { .. } | FieldKind::DataLocStr | FieldKind::UserStr | FieldKind::UserArgv => {
                unreachable!("string_read reads strings")
            }
            FieldKind::IntArray { .. } | FieldKind::Unsupported => {
                unreachable!("the binder only admits ints and strings")
            }
        },
    }
}

/// The C statement reading string column `c` into the char array `dest`
/// (`sizeof(dest)` bytes) with one helper call: comm's stack local, the
/// column's field in the string scratch, or an output slot — a record or key
/// field ([`crate::plan::slot_string_reads`] picks those). None for every
/// other column.
fn string_read(c: &ColumnSource, event: &crate::bind::BoundEvent, dest: &str) -> Option<String> {
    let ColumnSource::Field { name, offset, kind, .. } = c else {
        return matches!(c, ColumnSource::System(SystemColumn::Comm)).then(|| format!("\tebq_current_comm({dest});\n"));
    };
    let read = match kind {
        FieldKind::CharArray { .. } => {
            format!("bpf_probe_read_kernel_str({dest}, sizeof({dest}), (void *)ctx + {offset});")
        }
        FieldKind::DataLocStr => {
            format!("bpf_probe_read_kernel_str({dest}, sizeof({dest}), (void *)ctx + (ctx->{name} & 0xffff));")
        }
        FieldKind::UserStr => user_str_read(dest, &user_str_pointer(event, *offset)),
        _ => return None,
    };
    Some(format!("\t{read}\t/* {name} */\n"))
}

/// The C expression of the pointer a user string field at `offset` of
/// `event` reads: the record's field, or for `str(argN)` of a probe the
/// argument (a register, USDT's decoded operand), for `str(retval)` of a
/// return probe the return value (its slot follows the six argument
/// registers; an fentry's `retval` slot is its own `argN`, `ctx[N]`).
pub(crate) fn user_str_pointer(event: &crate::bind::BoundEvent, offset: u32) -> String {
    let slot = (offset / 8) as usize;
    let probe =
        matches!(event.source, crate::bind::EventSource::Uprobe { .. } | crate::bind::EventSource::Fentry { .. });
    let column = match probe && slot >= crate::catalog::probe::ARG_REGS.len() {
        true => "retval".to_string(),
        false => format!("arg{slot}"),
    };
    probe::column_expr(event, &column).unwrap_or_else(|| format!("*(__u64 *)((void *)ctx + {offset})"))
}

/// The read of the user string at `pointer` into `dest` (at least 2 bytes:
/// `str()` reads one byte or more), marked NULL and counted when it fails
/// (`ebq_user_str_read`; user space reads the mark: `StructField::null_marked`).
pub(crate) fn user_str_read(dest: &str, pointer: &str) -> String {
    format!("ebq_user_str_read({dest}, bpf_probe_read_user_str({dest}, sizeof({dest}), (const void *){pointer}));")
}

/// The program `function` of `k` (its record struct, for a classic
/// tracepoint, is `record`).
/// The program of one event: its scope check (or a pairing's end), the
/// stats, the filter, then what it does with a matching event: update its
/// group ([`group_update`]) or emit its row ([`row_emit`]).
fn program(k: &KernelPlan, function: &str, record: &str) -> String {
    let mut c = String::new();
    let header = program_header(&k.event, function, record);
    let stage_limit = match &k.output {
        KernelOutput::Rows { stage_limit, .. } if k.pairing.is_none() => *stage_limit,
        _ => None,
    };
    if stage_limit == Some(crate::plan::StageLimit::Trigger) {
        return format!("{header}\n{}", stages::TRIGGER_ONLY);
    }
    let _ = write!(c, "{header}\n{{\n{}", probe::prologue(&k.event));
    let reads_pid = reads_pid_tgid(k);
    if reads_pid {
        c.push_str("\t__u64 pid_tgid = bpf_get_current_pid_tgid();\n");
    }
    let mut loaded: Vec<ColumnSource> = vec![];
    // The scratch for string columns, once the event is known to be in scope.
    let strings = if strings::main_reads(k) { strings::LOOKUP } else { "" };
    match &k.pairing {
        None if reads_pid => c.push_str("\tif (!ebq_in_scope(pid_tgid >> 32))\n\t\treturn ebq_out_of_scope();\n"),
        None => c.push_str("\tif (!ebq_in_scope_now())\n\t\treturn ebq_out_of_scope();\n"),
        Some(p) => {
            c.push_str(strings);
            // The end event's time before the pair's bookkeeping (a lookup, a copy, a delete: up to
            // a microsecond), as the start reads its own first: a latency spans the two events, not
            // this program's work too (runqlat's few-µs buckets beside libbpf-tools', issue 40).
            if end_reads_time(k) {
                c.push_str(&load_column(&ColumnSource::System(SystemColumn::Time), DataType::U64, &k.event));
                loaded.push(ColumnSource::System(SystemColumn::Time));
            }
            c.push_str(&pairing::end_lookup(p, &k.event));
            loaded.extend(p.keys.iter().flat_map(|(_, e, _)| columns_of([e], &[])).map(|(c, _)| c));
        }
    }
    if k.pairing.is_none() {
        c.push_str(strings);
    }
    c.push_str(
        "\t__u32 zero = 0;\n\tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\
         \tif (!stats)\n\t\treturn 0;\n",
    );
    if let Some(p) = &k.pairing {
        c.push_str(&pairing::end_take(p));
    }
    c.push_str("\tstats->seen++;\n");
    let load = |col: &ColumnSource, ty: DataType| match &k.pairing {
        Some(p) if col.is_start() => pairing::load_carried(p, col, ty),
        _ => load_column(col, ty, &k.event),
    };
    let filter_cols = columns_of(k.filter.iter(), &loaded);
    if let Some(f) = &k.filter {
        c.push('\n');
        let mut done = loaded.clone();
        for step in where_steps(f) {
            for (col, ty) in columns_of(step.iter().copied(), &done) {
                c.push_str(&load(&col, ty));
                done.push(col);
            }
            let (text, test) = match step.as_slice() {
                [one] => (one.to_string(), c_expr(one)),
                many => (
                    many.iter().map(|e| format!("({e})")).collect::<Vec<_>>().join(" AND "),
                    format!("({})", many.iter().map(|e| c_expr(e)).collect::<Vec<_>>().join(" && ")),
                ),
            };
            let _ = write!(c, "\t/* WHERE {} */\n\tif (!{test})\n\t\treturn 0;\n", comment_safe(&text));
        }
    }
    c.push_str("\tstats->matched++;\n\n");
    loaded.extend(filter_cols.into_iter().map(|(c, _)| c));
    let skip = loaded;
    if let Some(limit) = stage_limit {
        return c + &stages::rows_tail(&k.output, limit, &skip, &load);
    }
    let in_slot = k.string_slots();
    c + &match &k.output {
        KernelOutput::Aggregate { .. } => group_update(k, &skip, &load, &in_slot),
        KernelOutput::Rows { .. } => row_emit(k, &skip, &load, &in_slot),
    }
}

/// An aggregate program's tail: load the key's and aggregates' columns
/// (`skip`: those loaded already), build the key, find or create the group
/// (`in_slot`: key fields read into the string scratch), update its slots.
fn group_update(
    k: &KernelPlan,
    skip: &[ColumnSource],
    load: &dyn Fn(&ColumnSource, DataType) -> String,
    in_slot: &[usize],
) -> String {
    let KernelOutput::Aggregate {
        key,
        key_fields,
        value,
        slots,
        sketches,
        single_slot,
        value_on_stack,
        late_names,
        ..
    } = &k.output
    else {
        return String::new();
    };
    let mut c = String::new();
    let keys = key_fields.iter().enumerate().filter(|(i, _)| !in_slot.contains(i)).map(|(_, (e, _))| e);
    let exprs = keys.chain(slots.iter().flat_map(crate::plan::ValueSlot::exprs)).chain(sketches);
    for (col, ty) in columns_of(exprs, skip) {
        c.push_str(&load(&col, ty));
    }
    if !*single_slot || !sketches.is_empty() {
        c.push_str("\tstruct ebq_key key = {};\n");
    }
    match k.window {
        KernelWindow::None => {}
        KernelWindow::Time { .. } => c.push_str("\tkey.window = ebq_window;\n"),
        KernelWindow::Count { n } => {
            let _ = writeln!(c, "\tkey.window = __sync_fetch_and_add(&ebq_seq, 1) / {n}ULL;");
        }
    }
    for (i, (e, field)) in key_fields.iter().enumerate() {
        c.push_str(&slot_assign("key.", &key.fields[*field].name, e, in_slot.contains(&i).then_some(&k.event)));
    }
    let fresh = if *single_slot {
        single_slot::LOOKUP
    } else if !*value_on_stack {
        hist::FRESH_FROM_ZERO_MAP
    } else {
        "\tstruct ebq_value *v = bpf_map_lookup_elem(&ebq_groups, &key);\n\tif (!v) {\n\
         \t\tstruct ebq_value fresh = {};\n\n\t\tbpf_map_update_elem(&ebq_groups, &key, &fresh, BPF_NOEXIST);\n\
         \t\tv = bpf_map_lookup_elem(&ebq_groups, &key);\n\t\tif (!v) {\n\t\t\tstats->dropped++;\t/* group map full */\n\
         \t\t\treturn 0;\n\t\t}\n\t}\n"
    };
    match late_names {
        Some(late) => c.push_str(&late_names::on_new_group(fresh, late, key, key_fields)),
        None => c.push_str(fresh),
    }
    for s in slots {
        c.push_str(&slot_update(value, s));
    }
    c.push_str(&hist::sketch_updates(sketches));
    c.push_str("\tv->count++;\n\treturn 0;\n}\n\n");
    c
}

/// A row program's tail: load the record's columns, reserve the record (or
/// the fold's slot), fill it and submit it.
fn row_emit(
    k: &KernelPlan,
    skip: &[ColumnSource],
    load: &dyn Fn(&ColumnSource, DataType) -> String,
    in_slot: &[usize],
) -> String {
    let KernelOutput::Rows { record, fields, per_cpu_rings, fold, .. } = &k.output else {
        return String::new();
    };
    let mut c = String::new();
    let exprs = fields.iter().enumerate().filter(|(i, _)| !in_slot.contains(i)).map(|(_, (e, _))| e);
    for (col, ty) in columns_of(exprs, skip) {
        c.push_str(&load(&col, ty));
    }
    c.push_str(&match fold {
        Some(_) => row_fold::ROW_SLOT.to_string(),
        None => rings::reserve(*per_cpu_rings),
    });
    for (i, (e, field)) in fields.iter().enumerate() {
        let f = &record.fields[*field];
        c.push_str(&slot_assign("r->", &f.name, e, in_slot.contains(&i).then_some(&k.event)));
        if f.null_marked && !crate::plan::may_be_unreadable(e) {
            // A union's field another branch reads through a pointer: this branch's string is
            // never NULL, and past its NUL the ring holds stale bytes, so an empty one clears
            // the mark.
            let _ = write!(c, "\tif (!r->{0}[0])\n\t\tr->{0}[1] = 0;\n", f.name);
        }
    }
    match fold {
        Some(_) => c.push_str(row_fold::HAND_OVER),
        None => c.push_str(&format!(
            "\tbpf_ringbuf_submit(r, ebq_wakeup_flag({}EBQ_RECORD_BYTES(*r)));\n\treturn 0;\n}}\n\n",
            if *per_cpu_rings { "ring, " } else { "" }
        )),
    }
    c
}

/// The line opening program `function` on `event` (whose record struct, for
/// a classic tracepoint, is `record`); at an expanding event, its row function.
fn program_header(event: &crate::bind::BoundEvent, function: &str, record: &str) -> String {
    if let crate::bind::EventSource::Expand { .. } = event.source {
        return expand::row_header(function, record);
    }
    probe::program_header(event, function).unwrap_or_else(|| {
        let (category, name) = (&event.format.category, &event.format.name);
        format!("SEC(\"tracepoint/{category}/{name}\")\nint {function}(struct {record} *ctx)")
    })
}

/// Does the main program read `pid` or `tid` of its own event?
/// True when the end program of a JOIN reads its own event's `time` (not the start's, carried).
fn end_reads_time(k: &KernelPlan) -> bool {
    let mut cols = vec![];
    for e in k.filter.iter().chain(k.output.exprs()) {
        e.typed_columns(&mut cols);
    }
    cols.iter().any(|(c, _)| matches!(c, ColumnSource::System(SystemColumn::Time)))
}

fn reads_pid_tgid(k: &KernelPlan) -> bool {
    let mut cols = vec![];
    let keys = k.pairing.iter().flat_map(|p| p.keys.iter().map(|(_, e, _)| e));
    for e in k.filter.iter().chain(k.output.exprs()).chain(keys) {
        e.typed_columns(&mut cols);
    }
    cols.iter().any(|(c, _)| matches!(c, ColumnSource::System(SystemColumn::Pid | SystemColumn::Tid)))
}

/// `target.field = expr;`, or for a slot [`crate::plan::slot_string_reads`]
/// picked (`read_at` is then its event) the string read straight into it.
fn slot_assign(target: &str, field: &str, e: &ScalarExpr, read_at: Option<&crate::bind::BoundEvent>) -> String {
    match (e, read_at) {
        (ScalarExpr::Column { source, .. }, Some(event)) => {
            string_read(source, event, &format!("{target}{field}")).expect("slot_string_reads picks strings")
        }
        _ => assign(target, field, e),
    }
}

/// `target.field = expr;` (strings are copied).
pub(crate) fn assign(target: &str, field: &str, e: &ScalarExpr) -> String {
    match e {
        // A carried string is a pointer into the scratch pair: clang expands a
        // copy of unknown alignment through the stack, the helper does not.
        ScalarExpr::Column { source, ty: DataType::Str { .. } } if source.is_start() => {
            let local = local_name(source);
            format!("\tbpf_probe_read_kernel({target}{field}, sizeof({target}{field}), {local});\n")
        }
        // A string in the scratch (`strings`), the same; and the scratch is not zeroed past the
        // NUL, so the copy stops there: keys and stashes start zeroed, and the decoder stops at
        // the NUL of a record's field.
        ScalarExpr::Column { source, ty: DataType::Str { .. } } if crate::plan::in_string_scratch(source) => {
            let local = local_name(source);
            let copy = format!("\tbpf_probe_read_kernel_str({target}{field}, sizeof({target}{field}), {local});\n");
            match source {
                // An argv is zeroed whole when it is read, and its last bytes (where its entries start)
                // and NULL marker come after its NUL: copied whole.
                ColumnSource::Field { kind: FieldKind::UserArgv, .. } => {
                    format!("\tbpf_probe_read_kernel({target}{field}, sizeof({target}{field}), {local});\n")
                }
                // The copy stops at the NUL: an empty user string takes its NULL marker (byte 1) along.
                ColumnSource::Field { kind: FieldKind::UserStr, .. } => {
                    format!("{copy}\tif (!{target}{field}[0])\n\t\t{target}{field}[1] = {local}[1];\n")
                }
                _ => copy,
            }
        }
        ScalarExpr::Column { source, ty: DataType::Str { .. } } => {
            let local = local_name(source);
            format!("\t__builtin_memcpy({target}{field}, {local}, sizeof({target}{field}));\n")
        }
        e if e.is_const_str() => strings::constant(&format!("{target}{field}"), e),
        e => format!("\t{target}{field} = {};\n", c_expr(e)),
    }
}

fn slot_update(value: &StructLayout, s: &crate::plan::ValueSlot) -> String {
    let f = &value.fields[s.field];
    let (name, ty) = (&f.name, f.ty.c_type());
    let x = c_expr(&s.arg);
    let shown = comment_safe(&s.arg.to_string());
    match s.func {
        AggFunc::Sum => format!("\tv->{name} += ({ty})({x});\t/* SUM({shown}) */\n"),
        AggFunc::Min => format!(
            "\t{{\n\t\t{ty} x = {x};\t/* MIN({shown}) */\n\n\t\tif (v->count == 0 || x < v->{name})\n\t\t\tv->{name} = x;\n\t}}\n"
        ),
        AggFunc::Max => format!(
            "\t{{\n\t\t{ty} x = {x};\t/* MAX({shown}) */\n\n\t\tif (v->count == 0 || x > v->{name})\n\t\t\tv->{name} = x;\n\t}}\n"
        ),
        AggFunc::Hist(_) | AggFunc::Lhist(_) => hist::slot_update(value, s),
        AggFunc::ApproxCountDistinct => hist::hll_update(value, s),
        AggFunc::ApproxTopK { k, .. } => hist::top_k_update(value, s, k),
        AggFunc::Count | AggFunc::Avg | AggFunc::CountDistinct | AggFunc::Quantile { .. } => {
            unreachable!("the planner maps COUNT to count, AVG to a SUM slot, COUNT(DISTINCT) to a key, QUANTILE to a sketch")
        }
    }
}

/// The fork follower, or (when this kernel's fork event lacks what it
/// reads) the comment that stands in its place.
fn fork_program(k: &KernelPlan) -> Result<String, &'static str> {
    let fork = &k.fork_event;
    let Some(child) =
        fork.field("child_pid").filter(|f| f.kind == FieldKind::Int && structs::in_struct(f.offset, f.size))
    else {
        return Err("/* sched_process_fork has no child_pid field on this kernel: -c cannot follow children. */\n");
    };
    let mut c = structs::event_struct("ebq_fork_event", "tracepoint:sched:sched_process_fork", fork);
    let ty = DataType::int_of_size(child.size, child.signed).c_type();
    let _ = write!(
        c,
        "/* Follows children of traced processes (scope 2). */\nSEC(\"tracepoint/sched/sched_process_fork\")\n\
         int ebq_follow_fork(struct ebq_fork_event *ctx)\n{{\n\t__u32 parent = bpf_get_current_pid_tgid() >> 32;\n\
         \t__u32 child = ({ty})ctx->child_pid;\n\t__u8 one = 1;\n\n\tif (!bpf_map_lookup_elem(&ebq_pids, &parent))\n\t\treturn 0;\n\
         \tif (bpf_map_update_elem(&ebq_pids, &child, &one, BPF_ANY)) {{\n\t\t__u32 zero = 0;\n\
         \t\tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\n\
         \t\tif (stats)\n\t\t\tstats->untracked++;\t/* ebq_pids full: this child is not traced */\n\t}}\n\treturn 0;\n}}\n"
    );
    Ok(c)
}

/// Forgets a traced process when its last thread exits (`group_dead`), so
/// `ebq_pids` holds live processes only and a pid the kernel hands out again
/// is not traced. Attached with the fork follower (scope 2 only); the
/// comment that stands in its place when the exit event cannot tell.
fn exit_program(k: &KernelPlan) -> Result<String, &'static str> {
    let Some(exit) = &k.exit_event else {
        return Err(
            "/* sched_process_exit has no group_dead field on this kernel: ended processes stay in ebq_pids. */\n",
        );
    };
    if !exit.field("group_dead").is_some_and(|f| structs::in_struct(f.offset, f.size)) {
        return Err("/* sched_process_exit's group_dead cannot be read: ended processes stay in ebq_pids. */\n");
    }
    let mut c = structs::event_struct("ebq_exit_event", "tracepoint:sched:sched_process_exit", exit);
    c.push_str(
        "/* Forgets a traced process when its last thread exits (scope 2): the set keeps live processes only. */\n\
         SEC(\"tracepoint/sched/sched_process_exit\")\nint ebq_forget_exit(struct ebq_exit_event *ctx)\n{\n\
         \t__u32 tgid = bpf_get_current_pid_tgid() >> 32;\n\n\tif (ctx->group_dead)\n\
         \t\tbpf_map_delete_elem(&ebq_pids, &tgid);\n\treturn 0;\n}\n",
    );
    Ok(c)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod union_all_tests;
#[cfg(test)]
mod union_join_tests;
#[cfg(test)]
mod union_tests;
