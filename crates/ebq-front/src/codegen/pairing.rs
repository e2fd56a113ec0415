//! JOIN code: the pairing map, the start program that opens pairs, and the
//! end program's prologue that takes them.

use super::{assign, c_expr, columns_of, comment_safe, load_column, structs};
use crate::bind::BoundEvent;
use crate::bind::ColumnSource;
use crate::plan::Pairing;
use crate::types::DataType;
use std::fmt::Write;

/// The names of one pairing's structs, maps and start programs. A JOIN (or
/// the first branch of a top-level union) has the plain names; branch `b > 0`
/// of a union has its own, suffixed `_b` (`ebq_pending_2`), so several pairings
/// live in one object.
pub struct PairNames {
    /// The key struct (`ebq_pair_key`).
    pub key: String,
    /// The value struct (`ebq_stash`).
    pub stash: String,
    /// The pairing map (`ebq_pending`).
    pub pending: &'static str,
    /// The end program's per-CPU copy of its pair (`ebq_taken`).
    pub taken: &'static str,
    /// The start programs' per-CPU pair under construction, one slot per
    /// start program (`ebq_opening`).
    pub opening: &'static str,
    /// A per-thread pairing's value: the key and the stash (`ebq_thread_pair`).
    pub thread: String,
}

/// Most pairings in one object: one per union branch.
const MAX: usize = crate::bind::MAX_UNION_BRANCHES;
const TAKEN: [&str; MAX] = [
    "ebq_taken",
    "ebq_taken_1",
    "ebq_taken_2",
    "ebq_taken_3",
    "ebq_taken_4",
    "ebq_taken_5",
    "ebq_taken_6",
    "ebq_taken_7",
    "ebq_taken_8",
    "ebq_taken_9",
    "ebq_taken_10",
    "ebq_taken_11",
    "ebq_taken_12",
    "ebq_taken_13",
    "ebq_taken_14",
    "ebq_taken_15",
    "ebq_taken_16",
    "ebq_taken_17",
    "ebq_taken_18",
    "ebq_taken_19",
    "ebq_taken_20",
    "ebq_taken_21",
    "ebq_taken_22",
    "ebq_taken_23",
    "ebq_taken_24",
    "ebq_taken_25",
    "ebq_taken_26",
    "ebq_taken_27",
    "ebq_taken_28",
    "ebq_taken_29",
    "ebq_taken_30",
    "ebq_taken_31",
];
const OPENING: [&str; MAX] = [
    "ebq_opening",
    "ebq_opening_1",
    "ebq_opening_2",
    "ebq_opening_3",
    "ebq_opening_4",
    "ebq_opening_5",
    "ebq_opening_6",
    "ebq_opening_7",
    "ebq_opening_8",
    "ebq_opening_9",
    "ebq_opening_10",
    "ebq_opening_11",
    "ebq_opening_12",
    "ebq_opening_13",
    "ebq_opening_14",
    "ebq_opening_15",
    "ebq_opening_16",
    "ebq_opening_17",
    "ebq_opening_18",
    "ebq_opening_19",
    "ebq_opening_20",
    "ebq_opening_21",
    "ebq_opening_22",
    "ebq_opening_23",
    "ebq_opening_24",
    "ebq_opening_25",
    "ebq_opening_26",
    "ebq_opening_27",
    "ebq_opening_28",
    "ebq_opening_29",
    "ebq_opening_30",
    "ebq_opening_31",
];
/// The start program of union branch `b > 0` (index 0 unused: it is [`super::names::PAIR_START`]).
const BRANCH_STARTS: [&str; MAX] = [
    "ebq_pair_start",
    "ebq_pair_start_b1",
    "ebq_pair_start_b2",
    "ebq_pair_start_b3",
    "ebq_pair_start_b4",
    "ebq_pair_start_b5",
    "ebq_pair_start_b6",
    "ebq_pair_start_b7",
    "ebq_pair_start_b8",
    "ebq_pair_start_b9",
    "ebq_pair_start_b10",
    "ebq_pair_start_b11",
    "ebq_pair_start_b12",
    "ebq_pair_start_b13",
    "ebq_pair_start_b14",
    "ebq_pair_start_b15",
    "ebq_pair_start_b16",
    "ebq_pair_start_b17",
    "ebq_pair_start_b18",
    "ebq_pair_start_b19",
    "ebq_pair_start_b20",
    "ebq_pair_start_b21",
    "ebq_pair_start_b22",
    "ebq_pair_start_b23",
    "ebq_pair_start_b24",
    "ebq_pair_start_b25",
    "ebq_pair_start_b26",
    "ebq_pair_start_b27",
    "ebq_pair_start_b28",
    "ebq_pair_start_b29",
    "ebq_pair_start_b30",
    "ebq_pair_start_b31",
];

impl PairNames {
    /// The names of pairing `p`.
    pub fn of(p: &Pairing) -> PairNames {
        let suffix = if p.branch == 0 { String::new() } else { format!("_{}", p.branch) };
        PairNames {
            key: format!("ebq_pair_key{suffix}"),
            stash: format!("ebq_stash{suffix}"),
            pending: p.map_name(),
            taken: TAKEN[p.branch],
            opening: OPENING[p.branch],
            thread: format!("ebq_thread_pair{suffix}"),
        }
    }
}

/// The start events' record structs, the key and value structs and the map.
pub fn declarations(p: &Pairing) -> String {
    let n = PairNames::of(p);
    let mut c = String::new();
    for (i, start) in p.starts().iter().enumerate() {
        c.push_str(&super::probe::preamble(&start.start).unwrap_or_else(|| {
            structs::event_struct(&start_struct(p, i), &start.start.event_description(), &start.start.format)
        }));
    }
    if let Some(m) = &p.middle {
        c.push_str(
            &super::probe::preamble(&m.event)
                .unwrap_or_else(|| structs::event_struct(MIDDLE_STRUCT, &m.event.event_description(), &m.event.format)),
        );
    }
    c.push_str(&structs::layout_struct(&n.key, &p.key));
    // Never empty: the opening time is always kept.
    c.push_str(&structs::layout_struct(&n.stash, &p.stash));
    if p.per_thread {
        let _ = write!(
            c,
            "/* Open pairs, one per thread, in the thread's own storage: a thread makes one system call at a\n \
             * time, so its pair is found by the task (no hash, no delete) and goes with it. The key is kept\n \
             * to be compared at the end; opened_ns is 1 while the pair is open. in_scope: the thread\n \
             * was found in -c's process tree, which a process never leaves (no lookup at its next start). */\n\
             struct {} {{\n\tstruct {} key;\n\tstruct {} pair;\n\t__u32 in_scope;\n}};\n\n\
             struct {{\n\t__uint(type, BPF_MAP_TYPE_TASK_STORAGE);\n\t__uint(map_flags, BPF_F_NO_PREALLOC);\n\
             \t__type(key, int);\n\t__type(value, struct {});\n}} {} SEC(\".maps\");\n\n",
            n.thread, n.key, n.stash, n.thread, n.pending
        );
        return c;
    }
    let _ = write!(
        c,
        "/* Open pairs: what the end event needs from its start event, by pairing key.\n \
         * Not per-CPU: a pair may open on one CPU and close on another. */\nstruct {{\n\
         \t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, {});\n\
         \t__type(key, struct {});\n\t__type(value, struct {});\n}} {} SEC(\".maps\");\n\n",
        p.max_pending, n.key, n.stash, n.pending
    );
    let _ = write!(
        c,
        "/* The pair each start program builds before it goes into {}: per-CPU scratch (one slot\n \
         * per start program, which the kernel never runs nested on one CPU), not the 512-byte stack. */\n\
         struct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, {});\n\
         \t__type(key, __u32);\n\t__type(value, struct {});\n}} {} SEC(\".maps\");\n\n",
        n.pending,
        p.starts().len(),
        n.stash,
        n.opening
    );
    if !p.carried.is_empty() {
        let _ = write!(
            c,
            "/* The end program's copy of its pair (taken out of {} before use):\n \
             * per-CPU scratch, not the 512-byte BPF stack. */\nstruct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\
             \t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct {});\n}} {} SEC(\".maps\");\n\n",
            n.pending, n.stash, n.taken
        );
    }
    c
}

/// `key.field = (type)(expr);` for each pairing key, `side` picking the
/// start (true) or end expression.
fn fill_key(p: &Pairing, start: bool) -> String {
    let mut c = format!("\tstruct {} pk = {{}};\n", PairNames::of(p).key);
    for (s, e, pos) in &p.keys {
        let f = &p.key.fields[*pos];
        let x = if start { s } else { e };
        let _ = writeln!(c, "\tpk.{} = ({})({});", f.name, f.ty.c_type(), c_expr(x));
    }
    c
}

/// The function name of start program `i` (one per branch of a union).
pub fn start_name(p: &Pairing, i: usize) -> &'static str {
    if p.branch > 0 {
        BRANCH_STARTS[p.branch]
    } else if p.also.is_empty() {
        super::names::PAIR_START
    } else {
        super::names::PAIR_STARTS[i]
    }
}

/// The record struct of start event `i` of `p`.
fn start_struct(p: &Pairing, i: usize) -> String {
    match (p.branch, i) {
        (0, 0) => "ebq_start_event".to_string(),
        (0, i) => format!("ebq_start_event_{i}"),
        (b, _) => format!("ebq_start_event_b{b}"),
    }
}

/// The start programs, one per start event.
pub fn start_programs(p: &Pairing) -> String {
    let program = |(i, s): (usize, Pairing)| {
        let (name, record) = (start_name(p, i), start_struct(p, i));
        start_program(&s, i, name, &record) + &super::expand::driver(&s.start, name, &record)
    };
    p.starts().into_iter().enumerate().map(program).collect()
}

/// Start program `slot` of its pairing: scope, start-side WHERE, then store
/// the carried columns.
fn start_program(p: &Pairing, slot: usize, function: &str, record: &str) -> String {
    let format = &p.start;
    let header = super::program_header(&p.start, function, record);
    let mut c = String::new();
    let _ = write!(
        c,
        "/* Opens a pair at {}: keeps what the query needs until the end event. */\n{header}\n{{\n{}\
         \t__u64 pid_tgid = bpf_get_current_pid_tgid();\n{}",
        p.start.event_description(),
        super::probe::prologue(&p.start),
        start_scope(p),
    );
    if super::strings::start_reads(p) {
        c.push_str(super::strings::LOOKUP);
    }
    let filter_cols = columns_of(p.start_filter.iter(), &[]);
    if let Some(f) = &p.start_filter {
        for (col, ty) in &filter_cols {
            c.push_str(&load_column(col, *ty, format));
        }
        let _ = write!(c, "\t/* WHERE {} */\n\tif (!{})\n\t\treturn 0;\n", comment_safe(&f.to_string()), c_expr(f));
    }
    let loaded: Vec<ColumnSource> = filter_cols.into_iter().map(|(c, _)| c).collect();
    // A string read at the end keeps only its pointer, which assign_carried reads from the record.
    let inner: Vec<(ColumnSource, DataType)> = p
        .carried
        .iter()
        .filter(|(col, _, _)| !p.reads_at_end(col) && !is_middle(col))
        .map(|(col, ty, _)| (col.read_at_start().clone(), *ty))
        .collect();
    let key_exprs = p.keys.iter().map(|(s, _, _)| s);
    let mut wanted = columns_of(key_exprs, &loaded);
    for (col, ty) in inner {
        if !loaded.contains(&col) && !wanted.iter().any(|(w, _)| *w == col) {
            wanted.push((col, ty));
        }
    }
    // Carried file columns need their fd resolved first.
    let mut wanted = super::file::with_dependencies(wanted);
    wanted.retain(|(c, _)| !loaded.contains(c));
    for (col, ty) in &wanted {
        c.push_str(&load_column(col, *ty, format));
    }
    c.push_str(&fill_key(p, true));
    let names = PairNames::of(p);
    if p.per_thread {
        c.push_str(&open_thread_pair(&names));
        assign_carried(p, &mut c);
        c.push_str("\treturn 0;\n}\n\n");
        return c;
    }
    let _ = writeln!(
        c,
        "\t__u32 slot = {slot};\n\tstruct {} *s = bpf_map_lookup_elem(&{}, &slot);\n\n\tif (!s)\n\t\treturn 0;\n\
         \ts->{} = bpf_ktime_get_ns();\t/* its age evicts an orphan */",
        names.stash,
        names.opening,
        crate::plan::OPENED
    );
    assign_carried(p, &mut c);
    c.push_str(&open_pair(names.pending));
    c
}

/// A start program's scope check. A per-thread pair's storage remembers
/// that its thread is in `-c`'s process tree (scope 2: a process is added at
/// its fork and never leaves while it runs), so a thread's later starts skip
/// the `ebq_pids` hash lookup (issue 39 item 1: about 16 ns of the report's
/// entry); `--cgroup` (a task may move) and `-p` (one compare) look every time.
fn start_scope(p: &Pairing) -> String {
    let check = "\tif (!ebq_in_scope(pid_tgid >> 32))\n\t\treturn 0;\n";
    if !p.per_thread {
        return check.to_string();
    }
    let names = PairNames::of(p);
    format!(
        "\tstruct {} *tp = bpf_task_storage_get(&{}, bpf_get_current_task_btf(), 0, 0);\n\n\
         \tif (!(tp && tp->in_scope) && !ebq_in_scope(pid_tgid >> 32))\n\t\treturn 0;\n",
        names.thread, names.pending
    )
}

/// `s->field = …;` for each carried column.
fn assign_carried(p: &Pairing, c: &mut String) {
    for (col, ty, pos) in &p.carried {
        let e = crate::bind::ScalarExpr::Column { source: col.read_at_start().clone(), ty: *ty };
        let field = &p.stash.fields[*pos].name;
        if matches!(ty, DataType::Str { .. }) {
            // The slot keeps the last pair's bytes: a string read stops at its NUL, and the end
            // copies the whole field into keys, so the rest must be zeros.
            let _ = writeln!(c, "\t__builtin_memset(s->{field}, 0, sizeof(s->{field}));");
        }
        match col.read_at_start() {
            ColumnSource::Middle { name, .. } => {
                let _ = writeln!(c, "\ts->{field} = 0;\t/* {}: added to by the middle events */", comment_safe(name));
            }
            ColumnSource::Field { offset, .. } if p.reads_at_end(col) => {
                let _ = writeln!(
                    c,
                    "\t{{\t/* {}: its pointer, read at the end event */\n\t\t__u64 at = {};\n\n\
                     \t\t__builtin_memcpy(s->{field}, &at, sizeof(at));\n\t}}",
                    comment_safe(col.name()),
                    super::user_str_pointer(&p.start, *offset)
                );
            }
            _ => c.push_str(&assign("s->", field, &e)),
        }
    }
}

/// A per-thread start: the thread's slot (`tp`, looked up by
/// [`start_scope`]; made on the thread's first pair), counted
/// as open, or as `superseded` when the thread's last pair is still open
/// (its end never came); the pair is then written in place (`s`).
fn open_thread_pair(names: &PairNames) -> String {
    format!(
        "\t__u32 zero = 0;\n\tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\n\
         \tif (!stats)\n\t\treturn 0;\n\
         \tif (!tp)\n\t\ttp = bpf_task_storage_get(&{pending}, bpf_get_current_task_btf(), 0,\n\
         \t\t\t\t\t  BPF_LOCAL_STORAGE_GET_F_CREATE);\n\
         \tif (!tp) {{\n\t\tstats->pending_full++;\t/* no storage for this thread's pair: it is lost */\n\
         \t\treturn 0;\n\t}}\n\
         \ttp->in_scope = ebq_config.scope == 2;\n\
         \tif (tp->pair.{opened})\n\t\tstats->superseded++;\t/* the thread's open pair: its end never came */\n\
         \telse\n\t\tstats->{open}++;\n\
         \ttp->key = pk;\n\tstruct {stash} *s = &tp->pair;\n\n\
         \ts->{opened} = 1;\t/* open (a thread's pair is not aged: it goes with the thread) */\n",
        pending = names.pending,
        stash = names.stash,
        opened = crate::plan::OPENED,
        open = super::StatsField::ThreadPairs.c_name(),
    )
}

/// The start program's last step: the pair goes into `pending` as a new key.
/// A key already open means that pair's end never ran (block requests and
/// threads reuse their keys: the kernel can skip an end without counting it,
/// README "Accounting") or its start repeated (a requeued request issued
/// again): it is replaced and counted `superseded`, never silently
/// overwritten. Only the rare paths cost a second update.
fn open_pair(pending: &str) -> String {
    format!(
        "\tlong err = bpf_map_update_elem(&{pending}, &pk, s, BPF_NOEXIST);\n\
         \tif (!err)\n\t\treturn 0;\n\
         \t__u32 zero = 0;\n\
         \tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\n\
         \tif (!stats)\n\t\treturn 0;\n\
         \tif (err == -17 /* EEXIST */ && !bpf_map_update_elem(&{pending}, &pk, s, BPF_EXIST))\n\
         \t\tstats->superseded++;\t/* an open pair under this key: its end never came */\n\
         \telse if (bpf_map_update_elem(&{pending}, &pk, s, BPF_NOEXIST))\n\
         \t\tstats->pending_full++;\t/* pairing map full: this pair is lost */\n\
         \treturn 0;\n}}\n\n"
    )
}

/// End program, before the stats lookup: compute the pairing key and look the pair up.
pub fn end_lookup(p: &Pairing, format: &BoundEvent) -> String {
    let mut c =
        "\t/* Scope was checked when the pair opened (end events may run in interrupt context). */\n".to_string();
    for (col, ty) in columns_of(p.keys.iter().map(|(_, e, _)| e), &[]) {
        c.push_str(&load_column(&col, ty, format));
    }
    c.push_str(&fill_key(p, false));
    let n = PairNames::of(p);
    if p.per_thread {
        // Padding is an array: `==` would compare its address (never equal); it is zero on both sides.
        let same: Vec<String> = p
            .key
            .fields
            .iter()
            .filter(|f| !f.name.starts_with("__pad"))
            .map(|f| format!(" && tp->key.{0} == pk.{0}", f.name))
            .collect();
        let _ = writeln!(
            c,
            "\tstruct {} *tp = bpf_task_storage_get(&{}, bpf_get_current_task_btf(), 0, 0);\n\
             \tstruct {} *pending = tp && tp->pair.{}{} ? &tp->pair : 0;",
            n.thread,
            n.pending,
            n.stash,
            crate::plan::OPENED,
            same.concat()
        );
        return c;
    }
    let _ = writeln!(c, "\tstruct {} *pending = bpf_map_lookup_elem(&{}, &pk);", n.stash, n.pending);
    c
}

/// End program, after the stats lookup: no open pair → count and stop;
/// else copy the carried columns (if any) and close the pair.
pub fn end_take(p: &Pairing) -> String {
    let n = PairNames::of(p);
    let unmatched = "\tif (!pending) {\n\t\tstats->unmatched++;\t/* no open pair: its start came before ebq attached, or was filtered */\n\
                     \t\treturn 0;\n\t}\n";
    if p.per_thread {
        // Only this thread writes its pair, so the end reads it in place after closing it.
        let start =
            if p.carried.is_empty() { String::new() } else { format!("\tstruct {} *start = pending;\n", n.stash) };
        return format!(
            "{unmatched}{start}\tpending->{} = 0;\t/* closed */\n\tstats->{}--;\n",
            crate::plan::OPENED,
            super::StatsField::ThreadPairs.c_name()
        );
    }
    let copy = if p.carried.is_empty() {
        String::new()
    } else {
        format!(
            "\tstruct {} *start = bpf_map_lookup_elem(&{}, &zero);\n\tif (!start)\n\t\treturn 0;\n\t*start = *pending;\n",
            n.stash, n.taken
        )
    };
    format!("{unmatched}{copy}\tbpf_map_delete_elem(&{}, &pk);\n", n.pending)
}

/// Reads a carried column from the copied pair (strings by pointer, no copy).
pub fn load_carried(p: &Pairing, col: &ColumnSource, ty: DataType) -> String {
    let local = super::local_name(col);
    let field = p.field_of(col).expect("the planner carries every start column the end program reads");
    match ty {
        DataType::Str { .. } if p.reads_at_end(col) => format!(
            "\t{{\t/* {}: read now, from the pointer the start kept (the call faulted its page in) */\n\
             \t\tconst void *at = 0;\n\n\
             \t\t__builtin_memcpy(&at, start->{field}, sizeof(at));\n\
             \t\t__builtin_memset(start->{field}, 0, sizeof(at));\t/* the rest was zeroed at the start */\n\
             \t\t{}\n\t}}\n\tconst char *{local} = start->{field};\n",
            comment_safe(col.name()),
            super::user_str_read(&format!("start->{field}"), "at")
        ),
        DataType::Str { .. } => format!("\tconst char *{local} = start->{field};\n"),
        ty => format!("\t{} {local} = start->{field};\t/* {} */\n", ty.c_type(), col.name()),
    }
}

/// The record struct of a chain's middle event.
const MIDDLE_STRUCT: &str = "ebq_middle_event";

/// Is carried column `c` a chain's middle accumulator (zeroed at the start, not read there)?
fn is_middle(c: &ColumnSource) -> bool {
    matches!(c.read_at_start(), ColumnSource::Middle { .. })
}

/// A chain's middle program: finds the open pair by its own key columns and
/// adds to the pair's accumulators in place, atomically (the pair is in a
/// shared HASH, and its end or another middle event may run on another CPU).
/// Scoped as the start is (`-p`, `-c`, `--cgroup`): an out-of-scope event
/// has no pair of its own to find. A middle event in scope with no open pair
/// changes nothing and is counted (`middle_unmatched`). Empty without a middle.
pub fn middle_program(p: &Pairing) -> String {
    let Some(m) = &p.middle else { return String::new() };
    let name = super::names::PAIR_MIDDLE;
    let header = super::program_header(&m.event, name, MIDDLE_STRUCT);
    let mut c = format!(
        "/* Adds {} to its open pair's per-pair aggregates. */\n{header}\n{{\n{}\
         \t__u64 pid_tgid = bpf_get_current_pid_tgid();\n\tif (!ebq_in_scope(pid_tgid >> 32))\n\t\treturn 0;\n",
        m.event.event_description(),
        super::probe::prologue(&m.event),
    );
    let reads: Vec<&crate::bind::ScalarExpr> = m.keys.iter().chain(m.aggs.iter().map(|a| &a.arg)).collect();
    for (col, ty) in columns_of(reads, &[]) {
        c.push_str(&load_column(&col, ty, &m.event));
    }
    let n = PairNames::of(p);
    c.push_str(&format!("\tstruct {} pk = {{}};\n", n.key));
    for (e, (_, _, pos)) in m.keys.iter().zip(&p.keys) {
        let f = &p.key.fields[*pos];
        let _ = writeln!(c, "\tpk.{} = ({})({});", f.name, f.ty.c_type(), c_expr(e));
    }
    let _ = write!(
        c,
        "\tstruct {} *pending = bpf_map_lookup_elem(&{}, &pk);\n\n\tif (!pending) {{\n\
         \t\t__u32 zero = 0;\n\t\tstruct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);\n\n\
         \t\tif (stats)\n\t\t\tstats->{}++;\t/* no open pair on its key: ignored */\n\t\treturn 0;\n\t}}\n",
        n.stash,
        n.pending,
        super::StatsField::MiddleUnmatched.c_name()
    );
    for (i, a) in m.aggs.iter().enumerate() {
        let Some(field) = p.middle_field(i) else { continue };
        let add = match a.func {
            crate::bind::AggFunc::Count => "1".to_string(),
            _ => format!("({})({})", a.ty.c_type(), c_expr(&a.arg)),
        };
        let _ = writeln!(c, "\t__sync_fetch_and_add(&pending->{field}, {add});");
    }
    c.push_str("\treturn 0;\n}\n\n");
    c + &super::expand::driver(&m.event, name, MIDDLE_STRUCT)
}
