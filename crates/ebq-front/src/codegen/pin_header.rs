//! The C header written for pinned maps (`--pin`): the layout an external
//! reader (an LDMS sampler, any libbpf program) needs to decode them.
//!
//! The structs are the ones the BPF program itself uses ([`structs::layout_struct`]),
//! so the header cannot drift from the map. [`LAYOUT_VERSION`] numbers the
//! conventions around them (pin names, merge rules, window key), not a query's fields.

use super::{comment_safe, structs};
use crate::bind::AggFunc;
use crate::hist::Log2;
use crate::plan::{KernelOutput, KernelWindow, PhysicalPlan};
use crate::types::DataType;
use std::fmt::Write;

/// Version of the pinned layout conventions (`EBQ_LAYOUT_VERSION`). Bumped
/// when a reader written for the old conventions would misread the maps:
/// renamed pins, a changed merge rule or window key (2: keyless queries use a
/// one-slot array, and keys of queries without WINDOW have no window field).
/// A query's own fields
/// are described by the header itself and do not change the version.
pub const LAYOUT_VERSION: u32 = 2;

/// Pinned map names, relative to the pin directory.
pub mod pin_names {
    /// The per-CPU group map (`ebq_groups`).
    pub const GROUPS: &str = "groups";
    /// The per-CPU event accounting (`ebq_stats`).
    pub const STATS: &str = "stats";
    /// The per-CPU quantile sketch map (`ebq_sketch`), for QUANTILE/Pxx queries.
    pub const SKETCH: &str = "sketch";
}

/// The size checks' spelling for every compiler a reader may use: the
/// structs' `_Static_assert` is C11 only, C++11 calls it `static_assert`, and
/// C99 has neither (a negative array size fails the same way there).
const STATIC_ASSERT: &str = "\
/* Layout checks in C99, C11 and C++11 alike. */
#if defined(__cplusplus)
#define EBQ_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define EBQ_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#define EBQ_CONCAT_(a, b) a##b
#define EBQ_CONCAT(a, b) EBQ_CONCAT_(a, b)
#define EBQ_STATIC_ASSERT(cond, msg) typedef char EBQ_CONCAT(ebq_static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

";

/// A struct of the BPF program (checked with C11's `_Static_assert`) as the
/// header declares it, checked with [`STATIC_ASSERT`]'s macro.
fn portable(c_struct: String) -> String {
    c_struct.replace("_Static_assert(", "EBQ_STATIC_ASSERT(")
}

/// The header for the pins of an aggregate query under `dir` (its first, for
/// a one-program plan its only, program); `None` for row queries (they have
/// no map to pin: rows stream through a ring buffer). Its parts: the comment
/// that says how to read the pins, the window defines, then the key, value,
/// stats and sketch structs, each with what its fields hold.
pub fn pin_header(plan: &PhysicalPlan, dir: &str) -> Option<String> {
    let KernelOutput::Aggregate {
        key, key_fields, value, slots, hidden_keys, sketches, max_groups, single_slot, ..
    } = &plan.programs[0].output
    else {
        return None;
    };
    let kernel_window = plan.programs[0].window;
    let mut c = String::new();
    let sql: String = plan.sql.lines().map(|l| format!(" *   {}\n", comment_safe(l))).collect();
    let c_dir = dir.replace('\\', "\\\\").replace('"', "\\\"");
    let dir = comment_safe(dir);
    let window = window_comment(kernel_window, *single_slot);
    let _ = write!(
        c,
        "/* Layout of the maps ebq pinned under {dir}, generated for:\n{sql} *\n\
         \x20* Pins (open with bpf_obj_get(\"{dir}/NAME\")):\n\
         \x20*   groups  {groups}\n\
         \x20*   stats   BPF_MAP_TYPE_PERCPU_ARRAY, key __u32 0, value struct ebq_stats\n{sketch}\
         \x20*\n\
         \x20* Per-CPU values: bpf_map_lookup_elem fills one value per possible CPU\n\
         \x20* (libbpf_num_possible_cpus(); each value padded to a multiple of 8 bytes, which\n\
         \x20* these structs already are). The reader merges them: a CPU whose count is 0 has\n\
         \x20* not seen the group (skip it); count, sums and histogram buckets add; min_* keep\n\
         \x20* the smallest, max_* the largest; AVG(x) is the sum slot / count.\n\
         \x20*\n{window}\
         \x20*\n\
         \x20* Versioning: EBQ_LAYOUT_VERSION changes when pin names, merge rules or the\n\
         \x20* window key change. The structs below describe this query only.\n\
         \x20*/\n\
         #ifndef EBQ_LAYOUT_H\n#define EBQ_LAYOUT_H\n\n#include <linux/types.h>\n\n{STATIC_ASSERT}\
         #define EBQ_LAYOUT_VERSION {LAYOUT_VERSION}\n\
         #define EBQ_PIN_DIR \"{c_dir}\"\n#define EBQ_PIN_GROUPS EBQ_PIN_DIR \"/{g}\"\n#define EBQ_PIN_STATS EBQ_PIN_DIR \"/{s}\"\n",
        sketch = if sketches.is_empty() {
            String::new()
        } else {
            " *   sketch  BPF_MAP_TYPE_PERCPU_HASH, key struct ebq_sketch_key, value __u64 (per CPU):\n \
             *           one count per (window, group, QUANTILE argument, sketch bucket)\n"
                .into()
        },
        groups = if *single_slot {
            "BPF_MAP_TYPE_PERCPU_ARRAY, key __u32 0, value struct ebq_value: one slot, as the\n \
             *           query has no GROUP BY and no window (EBQ_GROUPS_SINGLE_SLOT)"
                .to_string()
        } else {
            format!(
                "BPF_MAP_TYPE_PERCPU_HASH, key struct ebq_key, value struct ebq_value,\n \
                 *           at most {max_groups} entries (more groups are counted in ebq_stats.dropped)"
            )
        },
        g = pin_names::GROUPS,
        s = pin_names::STATS,
    );
    pin_defines(&mut c, kernel_window, key, !sketches.is_empty(), *single_slot);
    key_struct(&mut c, key, key_fields, *hidden_keys, *single_slot);
    value_struct(&mut c, value, slots);
    stats_and_sketch(&mut c, key, sketches);
    c.push_str("#endif /* EBQ_LAYOUT_H */\n");
    Some(c)
}

/// The defines after the header comment: the sketch pin, the one-slot
/// groups map, the window's kind and size, and whether the key has a window.
fn pin_defines(
    c: &mut String,
    kernel_window: KernelWindow,
    key: &crate::plan::StructLayout,
    has_sketch: bool,
    single_slot: bool,
) {
    if has_sketch {
        let _ = writeln!(c, "#define EBQ_PIN_SKETCH EBQ_PIN_DIR \"/{}\"", pin_names::SKETCH);
    }
    if single_slot {
        c.push_str("/* groups is a one-slot array keyed by __u32 0, not a hash keyed by struct ebq_key. */\n#define EBQ_GROUPS_SINGLE_SLOT 1\n");
    }
    let (kind, size) = match kernel_window {
        KernelWindow::None => ("0 /* none */", 0),
        KernelWindow::Time { size_ms } => ("1 /* time: EBQ_WINDOW_SIZE ms */", size_ms),
        KernelWindow::Count { n } => ("2 /* count: EBQ_WINDOW_SIZE events */", n),
    };
    let _ = write!(c, "#define EBQ_WINDOW_KIND {kind}\n#define EBQ_WINDOW_SIZE {size}ULL\n");
    let has_window = key.fields.iter().any(|f| f.name == "window");
    let _ = write!(
        c,
        "/* 1 when struct ebq_key starts with the window number (windowed and keyless queries). */\n\
         #define EBQ_KEY_HAS_WINDOW {}\n\n",
        u8::from(has_window)
    );
}

/// The stats struct and, for quantiles, the sketch key struct, each after
/// a comment that says what it holds.
fn stats_and_sketch(c: &mut String, key: &crate::plan::StructLayout, sketches: &[crate::bind::ScalarExpr]) {
    c.push_str(
        "/* Event accounting, summed over CPUs: in scope, passed WHERE, lost (map full); JOINs:\n \
         * unmatched ends, starts lost to a full pairing map; -c: children not traced;\n \
         * -p/-c/--cgroup: events out of scope. */\n",
    );
    c.push_str(&portable(super::StatsLayout.c_struct()));
    if !sketches.is_empty() {
        let args: Vec<String> = sketches.iter().enumerate().map(|(i, a)| format!("{i}: {a}")).collect();
        let _ = write!(
            c,
            "/* Quantile sketch key; agg numbers the arguments [{}]. bucket b (ebq's hist::sketch_index):\n \
             * 0: the value 0; b > 0: OTel ExponentialHistogram scale 6 (Prometheus schema 6) bucket\n \
             * i = b - 2, the values v with 2^(i/64) < v <= 2^((i+1)/64); b < 0: the negative values\n \
             * whose magnitude is in bucket -b - 2. */\n{}",
            comment_safe(&args.join(", ")),
            portable(super::SketchKeyLayout { group: key.size }.c_struct())
        );
    }
}

/// The header comment's paragraph on windows: how ebq numbers, clears and
/// deletes the groups of each kind of window.
fn window_comment(kernel_window: KernelWindow, single_slot: bool) -> String {
    match kernel_window {
        KernelWindow::None if single_slot => {
            " * Windows: none. The one group is slot 0 of the groups array; ebq clears nothing while it\n \
             * runs (the slot holds running totals). It exists before the first event: count 0 on\n \
             * every CPU means no event yet (ebq prints no row then). With --keep-pins the final\n \
             * totals stay in the map after ebq exits.\n"
                .to_string()
        }
        KernelWindow::None => " * Windows: none. ebq_key has no window field; groups count from ebq's start and\n \
             * ebq clears nothing while it runs (the map holds running totals). With --keep-pins\n \
             * the final totals stay in the map after ebq exits.\n"
            .to_string(),
        KernelWindow::Time { size_ms } => format!(
            " * Windows: time, {size_ms} ms per kernel window. ebq_key.window numbers windows from 0\n \
             * (ebq's start). At each boundary ebq advances the number, reads the closed window's\n \
             * groups and deletes them: the map holds the open window (the largest window value\n \
             * present) and, for a few milliseconds after a boundary, the one being closed.\n \
             * A sliding window is assembled by ebq from kernel windows of one step each.\n"
        ),
        KernelWindow::Count { n } => format!(
            " * Windows: count, {n} matching events per kernel window; ebq_key.window is the\n \
             * event's number / {n}. ebq deletes a window's groups once it is complete.\n"
        ),
    }
}

/// The group key struct, after a comment that says what each field holds.
fn key_struct(
    c: &mut String,
    key: &crate::plan::StructLayout,
    key_fields: &[(crate::bind::ScalarExpr, usize)],
    hidden_keys: usize,
    single_slot: bool,
) {
    // Key: what each field holds.
    c.push_str(if single_slot {
        "/* Group key: not the groups map's key here (EBQ_GROUPS_SINGLE_SLOT), but the group\n \
         * part of the sketch key. window: always 0.\n"
    } else {
        "/* Group key. window: see above.\n"
    });
    let visible = key_fields.len() - hidden_keys;
    for (i, (expr, field)) in key_fields.iter().enumerate() {
        let f = &key.fields[*field];
        let what = if i < visible { "GROUP BY" } else { "COUNT(DISTINCT) of" };
        let text = match f.ty {
            DataType::Str { .. } => " (NUL-padded string)",
            _ if i >= visible => " (grouped on too: count the entries per GROUP BY key)",
            _ => "",
        };
        let _ = writeln!(c, " *   {}: {what} {}{text}", f.name, comment_safe(&expr.to_string()));
    }
    c.push_str(" * __pad fields are zero. */\n");
    c.push_str(&portable(structs::layout_struct("ebq_key", key)));
}

/// The value struct, after a comment that says what each slot holds, and
/// the defines that say how its histograms are bucketed.
fn value_struct(c: &mut String, value: &crate::plan::StructLayout, slots: &[crate::plan::ValueSlot]) {
    // Value: what each slot holds and how histograms are bucketed.
    c.push_str("/* Aggregates of one group on one CPU.\n *   count: events (COUNT(*))\n");
    let mut hist_defs = String::new();
    for s in slots {
        slot_comment(c, &mut hist_defs, s, value);
    }
    c.push_str(" */\n");
    c.push_str(&portable(structs::layout_struct("ebq_value", value)));
    c.push_str(&hist_defs);
    if !hist_defs.is_empty() {
        c.push('\n');
    }
}

/// One value slot's line of the value comment; a histogram's bucket
/// defines go to `hist_defs` (after the struct).
fn slot_comment(c: &mut String, hist_defs: &mut String, s: &crate::plan::ValueSlot, value: &crate::plan::StructLayout) {
    let f = &value.fields[s.field];
    let arg = comment_safe(&s.arg.to_string());
    let signed = s.arg.ty().is_signed();
    let upper = f.name.to_ascii_uppercase();
    match s.func {
        AggFunc::Hist(log2) => {
            let _ = writeln!(c, " *   {}: HIST({arg}), log2 bucket counters", f.name);
            let first = match (log2, signed) {
                (Log2::Floor, true) => "bucket 0: x < 0; bucket 1: x = 0; bucket i >= 2: [2^(i-2), 2^(i-1))",
                (Log2::Floor, false) => "bucket 0: x = 0; bucket i >= 1: [2^(i-1), 2^i)",
                (Log2::Ceil, true) => {
                    "bucket 0: x < 0; bucket 1: x = 0; bucket 2: x = 1; bucket i >= 3: (2^(i-3), 2^(i-2)]"
                }
                (Log2::Ceil, false) => "bucket 0: x = 0; bucket 1: x = 1; bucket i >= 2: (2^(i-2), 2^(i-1)]",
            };
            let _ = write!(
                hist_defs,
                "/* {}: {first} */\n#define EBQ_{upper}_BUCKETS {}\n#define EBQ_{upper}_LOG2 1\n{}",
                f.name,
                log2.slots(),
                if log2 == Log2::Ceil { format!("#define EBQ_{upper}_LOG2_CEIL 1\n") } else { String::new() }
            );
        }
        AggFunc::Lhist(l) => {
            let _ =
                writeln!(c, " *   {}: LHIST({arg}, {}, {}, {}), linear bucket counters", f.name, l.min, l.max, l.step);
            let _ = write!(
                hist_defs,
                "/* {}: bucket 0: x < MIN; bucket i in 1..=N: [MIN + (i-1)*STEP, MIN + i*STEP) (the last\n \
                 * one ends at MAX); bucket N+1: x >= MAX. */\n\
                 #define EBQ_{upper}_BUCKETS {}\n#define EBQ_{upper}_MIN {}LL\n#define EBQ_{upper}_MAX {}LL\n\
                 #define EBQ_{upper}_STEP {}ULL\n",
                f.name,
                l.slots(),
                l.min,
                l.max,
                l.step
            );
        }
        func => {
            let _ = writeln!(c, " *   {}: {func}({arg})", f.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::plan::{plan, PlanOptions};

    fn header(sql: &str) -> Option<String> {
        let catalog = Catalog::fixture();
        let logical = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &catalog).unwrap();
        pin_header(&plan(sql, &logical, &catalog, &PlanOptions::default()).unwrap(), "/sys/fs/bpf/ebq/q")
    }

    #[test]
    fn describes_keys_values_buckets_and_windows() {
        let h = header(
            "SELECT comm, COUNT(*), SUM(count), MAX(count), HIST(count) FROM syscalls.sys_enter_pread64 \
             GROUP BY comm WINDOW(time, 1000, 1000)",
        )
        .unwrap();
        for needle in [
            "#define EBQ_LAYOUT_VERSION 2",
            "struct ebq_key {",
            "struct ebq_value {",
            "GROUP BY comm (NUL-padded string)",
            "#define EBQ_HIST_2_BUCKETS 65",
            "#define EBQ_WINDOW_KIND 1",
            "#define EBQ_WINDOW_SIZE 1000ULL",
            "#define EBQ_PIN_GROUPS EBQ_PIN_DIR \"/groups\"",
            "max_1: MAX(count)",
        ] {
            assert!(h.contains(needle), "missing {needle:?} in\n{h}");
        }
    }

    #[test]
    fn a_single_slot_is_described_as_an_array() {
        let h = header("SELECT COUNT(*), MAX(count) FROM syscalls.sys_enter_pread64").unwrap();
        for needle in
            ["groups  BPF_MAP_TYPE_PERCPU_ARRAY, key __u32 0", "#define EBQ_GROUPS_SINGLE_SLOT 1", "count 0 on\n"]
        {
            assert!(h.contains(needle), "missing {needle:?} in\n{h}");
        }
        let h = header("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd").unwrap();
        assert!(h.contains("BPF_MAP_TYPE_PERCPU_HASH, key struct ebq_key") && !h.contains("SINGLE_SLOT"), "{h}");
    }

    #[test]
    fn row_queries_have_nothing_to_pin() {
        assert!(header("SELECT pid FROM syscalls.sys_enter_pread64").is_none());
    }
}
