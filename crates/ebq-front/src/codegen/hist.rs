//! C for histograms and quantile sketches (mirrored in Rust by [`crate::hist`]).
//!
//! HIST/LHIST counters live inline in the group's value (one lookup per event
//! serves every aggregate); new values are copied from the all-zero `ebq_zero`
//! map because they do not fit the BPF stack. Quantile sketches are sparse:
//! one per-CPU hash entry per (group, argument, bucket) that occurred. Every
//! computed bucket index is bounds-checked behind a compiler barrier, so the
//! verifier sees the check even when clang could prove it.

use crate::bind::{AggFunc, ScalarExpr};
use crate::hist::Log2;
use crate::plan::{StructLayout, ValueSlot};
use std::fmt::Write;

use super::{c_expr, comment_safe};

/// Helper functions, emitted only for queries with histograms or quantiles.
pub const HELPERS: &str = r#"/* Histogram and quantile buckets (ebq's hist module is the Rust mirror). */
#define EBQ_HIST_SLOTS 65
/* Hides a value from clang so the bounds check after it stays for the verifier. */
#define ebq_barrier_var(x) asm volatile("" : "+r"(x))

/* floor(log2(v)), 0 for 0: a binary search without loops, as bcc and bpftrace do. */
static __always_inline __u32 ebq_log2(__u64 v)
{
	__u32 r, shift;

	r = (v > 0xFFFFFFFFULL) << 5;
	v >>= r;
	shift = (v > 0xFFFF) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	return r | (__u32)(v >> 1);
}

/* HIST bucket: 0 for 0, else 1 + log2(v): [0, 1), [1, 2), [2, 4), ... [2^63, 2^64). */
static __always_inline __u32 ebq_hist_index(__u64 v)
{
	return v ? 1 + ebq_log2(v) : 0;
}

/* Signed HIST: bucket 0 holds negatives, the rest are ebq_hist_index shifted by one. */
static __always_inline __u32 ebq_hist_index_signed(__s64 v)
{
	return v < 0 ? 0 : 1 + ebq_hist_index((__u64)v);
}

"#;

/// The exporters' HIST buckets ([`crate::hist::Log2::Ceil`]), emitted after
/// [`HELPERS`] for queries planned with them.
pub const CEIL_HELPERS: &str = r#"/* HIST for exporters: 0 for 0, 1 for 1, else 2 + log2(v - 1): {0}, (0, 1], (1, 2], (2, 4], ...
 * (2^63, 2^64): Prometheus native / OTel exponential buckets at scale 0 (66 counters). */
#define EBQ_HIST_CEIL_SLOTS 66
static __always_inline __u32 ebq_hist_ceil_index(__u64 v)
{
	return v < 2 ? (__u32)v : 2 + ebq_log2(v - 1);
}

static __always_inline __u32 ebq_hist_ceil_index_signed(__s64 v)
{
	return v < 0 ? 0 : 1 + ebq_hist_ceil_index((__u64)v);
}

"#;

/// The quantile sketch's bucket code, emitted after [`HELPERS`] for queries
/// with sketches: OTel's exponential buckets at scale 6 (hist.rs explains the
/// method and holds the same table).
pub fn sketch_helpers() -> String {
    let mut table = String::new();
    for (m, b) in crate::hist::EXP_BOUNDS.iter().enumerate() {
        let sep = if m % 4 == 0 { "\n\t" } else { " " };
        let _ = write!(table, "{sep}0x{b:016X}ULL,");
    }
    format!(
        r#"/* floor(2^(63 + m/64)): the sketch's inner boundaries 2^(k + m/64) as 64-bit fixed point. */
static const __u64 ebq_exp_bounds[64] = {{{table}
}};

/*
 * OTel ExponentialHistogram bucket at scale 6 (Prometheus schema 6) of v >= 2:
 * the i with 2^(i/64) < v <= 2^((i+1)/64). k = floor(log2(v - 1)) puts v in
 * (2^k, 2^(k+1)]; j counts the boundaries 2^(k + m/64) below v by comparing
 * the table with v's mantissa (v - 1 shifted to the top, low bits all ones).
 */
static __always_inline __s32 ebq_exp_index(__u64 v)
{{
	__u64 u = v - 1, y;
	__u32 k = ebq_log2(u), s = 63 - k, j = 0, t;

	y = (u << s) | ((1ULL << s) - 1);
	if (ebq_exp_bounds[32] <= y)
		j = 32;
	t = j + 16; ebq_barrier_var(t); if (ebq_exp_bounds[t & 63] <= y) j = t;
	t = j + 8; ebq_barrier_var(t); if (ebq_exp_bounds[t & 63] <= y) j = t;
	t = j + 4; ebq_barrier_var(t); if (ebq_exp_bounds[t & 63] <= y) j = t;
	t = j + 2; ebq_barrier_var(t); if (ebq_exp_bounds[t & 63] <= y) j = t;
	t = j + 1; ebq_barrier_var(t); if (ebq_exp_bounds[t & 63] <= y) j = t;
	return (__s32)(k * 64 + j);
}}

/* Sketch bucket code, ordered like the values: 0 for 0, else the OTel index + 2 (1 holds 1). */
static __always_inline __s32 ebq_sketch_index(__u64 v)
{{
	if (v <= 1)
		return (__s32)v;
	return ebq_exp_index(v) + 2;
}}

/* Signed sketch: a negative value's code is minus its magnitude's. */
static __always_inline __s32 ebq_sketch_index_signed(__s64 v)
{{
	return v < 0 ? -ebq_sketch_index(-(__u64)v) : ebq_sketch_index((__u64)v);
}}

"#
    )
}

/// True when the plan needs [`HELPERS`].
pub fn needed(slots: &[ValueSlot], sketches: &[ScalarExpr]) -> bool {
    !sketches.is_empty()
        || slots.iter().any(|s| {
            s.func.is_histogram() || matches!(s.func, AggFunc::ApproxCountDistinct | AggFunc::ApproxTopK { .. })
        })
}

/// Maps besides `ebq_groups`: the zero value (histogram counters) and the sketch map.
/// `group_key`: bytes of `struct ebq_key`, which `struct ebq_sketch_key` begins with.
pub fn maps(value_on_stack: bool, sketches: &[ScalarExpr], max_buckets: u32, group_key: u32) -> String {
    let mut c = String::new();
    if !value_on_stack {
        c.push_str(
            "/* All-zero ebq_value for new groups: with histogram counters it is too big for the BPF stack. */\n\
             struct {\n\t__uint(type, BPF_MAP_TYPE_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\
             \t__type(value, struct ebq_value);\n} ebq_zero SEC(\".maps\");\n\n",
        );
    }
    if !sketches.is_empty() {
        let args: Vec<String> = sketches.iter().enumerate().map(|(i, a)| format!("{i}: {a}")).collect();
        let _ = write!(
            c,
            "/* Quantile sketches [{}]: one count per (window, group, argument, bucket) that occurred. */\n{}\
             struct {{\n\t__uint(type, BPF_MAP_TYPE_PERCPU_HASH);\n\t__uint(max_entries, {max_buckets});\n\
             \t__uint(map_flags, BPF_F_NO_PREALLOC);\t/* allocated as buckets occur */\n\
             \t__type(key, struct ebq_sketch_key);\n\t__type(value, __u64);\n}} ebq_sketch SEC(\".maps\");\n\n",
            comment_safe(&args.join(", ")),
            super::SketchKeyLayout { group: group_key }.c_struct()
        );
    }
    c
}

/// The new-group path when the value is copied from `ebq_zero`.
pub const FRESH_FROM_ZERO_MAP: &str = "\tstruct ebq_value *v = bpf_map_lookup_elem(&ebq_groups, &key);\n\tif (!v) {\n\
     \t\tstruct ebq_value *fresh = bpf_map_lookup_elem(&ebq_zero, &zero);\n\n\t\tif (!fresh)\n\t\t\treturn 0;\n\
     \t\tbpf_map_update_elem(&ebq_groups, &key, fresh, BPF_NOEXIST);\n\
     \t\tv = bpf_map_lookup_elem(&ebq_groups, &key);\n\t\tif (!v) {\n\t\t\tstats->dropped++;\t/* group map full */\n\
     \t\t\treturn 0;\n\t\t}\n\t}\n";

/// A signed 64-bit C literal (i64::MIN has no literal of its own).
fn c_i64(v: i64) -> String {
    if v == i64::MIN {
        "(-9223372036854775807LL - 1)".into()
    } else {
        format!("{v}LL")
    }
}

/// Counts one event in a HIST or LHIST slot.
pub fn slot_update(value: &StructLayout, s: &ValueSlot) -> String {
    let name = &value.fields[s.field].name;
    let x = c_expr(&s.arg);
    let shown = comment_safe(&s.arg.to_string());
    let signed = s.arg.ty().is_signed();
    let (comment, index, slots) = match s.func {
        AggFunc::Hist(log2) => {
            let (f, slots) = match (log2, signed) {
                (Log2::Floor, true) => ("ebq_hist_index_signed((__s64)", "EBQ_HIST_SLOTS"),
                (Log2::Floor, false) => ("ebq_hist_index((__u64)", "EBQ_HIST_SLOTS"),
                (Log2::Ceil, true) => ("ebq_hist_ceil_index_signed((__s64)", "EBQ_HIST_CEIL_SLOTS"),
                (Log2::Ceil, false) => ("ebq_hist_ceil_index((__u64)", "EBQ_HIST_CEIL_SLOTS"),
            };
            (format!("HIST({shown})"), format!("{f}({x}))"), slots.to_string())
        }
        AggFunc::Lhist(l) => {
            let n = l.buckets();
            let (ty, min, max) = if signed {
                ("__s64", c_i64(l.min), c_i64(l.max))
            } else {
                ("__u64", format!("{}ULL", l.min), format!("{}ULL", l.max))
            };
            // An unsigned argument with min 0 never underflows.
            let under = if !signed && l.min == 0 { String::new() } else { format!("x < {min} ? 0 : ") };
            let offset = if l.min == 0 { "x".to_string() } else { format!("((__u64)x - (__u64){min})") };
            return format!(
                "\t{{\n\t\t{ty} x = ({ty})({x});\t/* LHIST({shown}, {}, {}, {}): underflow, {n} buckets, overflow */\n\
                 \t\t__u32 i = {under}x >= {max} ? {} : 1 + {offset} / {}ULL;\n\n\
                 \t\tebq_barrier_var(i);\n\t\tif (i < {})\n\t\t\tv->{name}[i]++;\n\t}}\n",
                l.min,
                l.max,
                l.step,
                n + 1,
                l.step,
                n + 2
            );
        }
        _ => unreachable!("only histograms have bucket slots"),
    };
    format!(
        "\t{{\n\t\t__u32 i = {index};\t/* {comment} */\n\n\t\tebq_barrier_var(i);\n\t\tif (i < {slots})\n\t\t\tv->{name}[i]++;\n\t}}\n"
    )
}

/// Adds one event to an APPROX_COUNT_DISTINCT sketch: the register the
/// hash's top 10 bits pick keeps the largest rank (leading zeros of the other
/// 54 bits, plus one) seen. Mirrored by [`crate::hll::add`].
pub fn hll_update(value: &StructLayout, s: &ValueSlot) -> String {
    let name = &value.fields[s.field].name;
    format!(
        "\t{{\n\t\t__u64 h = ebq_hll_hash((__u64)({x}));\t/* APPROX_COUNT_DISTINCT({shown}) */\n\
         \t\t__u32 i = h >> 54;\t/* register: the hash's top 10 bits */\n\
         \t\t__u64 rest = h << 10;\n\
         \t\t__u8 rank = rest ? 64 - ebq_log2(rest) : 55;\t/* leading zeros of the other 54 bits, plus one */\n\n\
         \t\tebq_barrier_var(i);\n\t\tif (i < EBQ_HLL_REGISTERS && v->{name}[i] < rank)\n\t\t\tv->{name}[i] = rank;\n\t}}\n",
        x = c_expr(&s.arg),
        shown = comment_safe(&s.arg.to_string()),
    )
}

/// Counts one event of an APPROX_TOP_K sketch: its weight (1 unweighted)
/// added to one counter per Count-Min row (unrolled, each index
/// bounds-checked), the least of them is this CPU's estimate, offered to the
/// key's candidate slots. Mirrored by [`crate::topk::add`].
pub fn top_k_update(value: &StructLayout, s: &ValueSlot, k: u16) -> String {
    use crate::topk::{COUNTERS, ROWS, WIDTH};
    let name = &value.fields[s.field].name;
    let (w, shown_w) = match &s.weight {
        Some(w) => (format!("(__u64)({})", c_expr(w)), format!(", {}", comment_safe(&w.to_string()))),
        None => ("1".to_string(), String::new()),
    };
    let mut c = format!(
        "\t{{\n\t\t__u64 x = (__u64)({x}), w = {w};\t/* APPROX_TOP_K({shown}, {k}{shown_w}) */\n\
         \t\t__u64 h = ebq_hll_hash(x), est = ~0ULL, n;\n\
         \t\t__u32 h1 = (__u32)h, h2 = (__u32)(h >> 32) | 1, i;\n\n",
        x = c_expr(&s.arg),
        shown = comment_safe(&s.arg.to_string()),
    );
    for r in 0..ROWS {
        let _ = write!(
            c,
            "\t\ti = {base} + ((h1 + {r} * h2) & {mask});\t/* row {r} */\n\t\tebq_barrier_var(i);\n\
             \t\tif (i < {COUNTERS}) {{\n\t\t\tn = v->{name}[i] += w;\n\t\t\tif (n < est)\n\t\t\t\test = n;\n\t\t}}\n",
            base = r * WIDTH,
            mask = WIDTH - 1,
        );
    }
    let _ = write!(c, "\t\tebq_topk_offer(v->{name}, x, est, h, {});\n\t}}\n", crate::topk::slots(k) - 1);
    c
}

/// Counts one event in each quantile sketch. An event that misses any sketch
/// (map full, or busy: the program ran inside another update of it on this
/// CPU) counts once in `dropped`, so `dropped <= matched` holds.
pub fn sketch_updates(sketches: &[ScalarExpr]) -> String {
    if sketches.is_empty() {
        return String::new();
    }
    let mut c = "\t{\n\t\t__u8 missed = 0;\n\n".to_string();
    for (i, a) in sketches.iter().enumerate() {
        let x = c_expr(a);
        let index = if a.ty().is_signed() {
            format!("ebq_sketch_index_signed((__s64)({x}))")
        } else {
            format!("ebq_sketch_index((__u64)({x}))")
        };
        let _ = write!(
            c,
            "\t\t{{\n\t\t\tstruct ebq_sketch_key sk = {{ .group = key, .agg = {i}, .bucket = {index} }};\t/* sketch of {} */\n\
             \t\t\t__u64 *n = bpf_map_lookup_elem(&ebq_sketch, &sk);\n\n\t\t\tif (!n) {{\n\t\t\t\t__u64 none = 0;\n\n\
             \t\t\t\tbpf_map_update_elem(&ebq_sketch, &sk, &none, BPF_NOEXIST);\n\
             \t\t\t\tn = bpf_map_lookup_elem(&ebq_sketch, &sk);\n\t\t\t}}\n\t\t\tif (n)\n\t\t\t\t(*n)++;\n\
             \t\t\telse\n\t\t\t\tmissed = 1;\n\t\t}}\n",
            comment_safe(&a.to_string())
        );
    }
    c.push_str("\t\tif (missed)\n\t\t\tstats->dropped++;\t/* the event is missing from a quantile sketch */\n\t}\n");
    c
}

#[cfg(test)]
mod tests {
    use crate::codegen::tests::{assert_snapshot, generate_for};

    /// The generated C of a histogram query, compared with a checked-in snapshot
    /// (EBQ_UPDATE_SNAPSHOTS=1 rewrites it).
    #[test]
    fn histogram_snapshot() {
        let c = generate_for(
            "SELECT comm, COUNT(*), HIST(count), LHIST(count, 0, 400, 100), P50(count), P99(count) \
             FROM syscalls.sys_enter_pread64 GROUP BY comm WINDOW(time, 1000, 1000)",
        );
        assert_snapshot("histograms.bpf.c", &c);
    }

    #[test]
    fn one_sketch_per_argument_and_zeroed_values_from_a_map() {
        let c = generate_for(
            "SELECT pid, P50(count), P99(count), QUANTILE(fd, 0.5), HIST(count) FROM syscalls.sys_enter_pread64 GROUP BY pid",
        );
        assert_eq!(c.matches(".agg = 0,").count(), 1, "{c}");
        assert_eq!(c.matches(".agg = 1,").count(), 1, "{c}");
        assert!(!c.contains(".agg = 2,"), "{c}");
        assert!(c.contains("bpf_map_lookup_elem(&ebq_zero, &zero)"), "{c}");
        assert!(!c.contains("struct ebq_value fresh = {}"), "{c}");
        // Without histogram counters the value stays on the stack and no helpers are emitted.
        let c = generate_for("SELECT pid, P50(count) FROM syscalls.sys_enter_pread64 GROUP BY pid");
        assert!(c.contains("struct ebq_value fresh = {}") && !c.contains("ebq_zero"), "{c}");
        let c = generate_for("SELECT COUNT(*) FROM syscalls.sys_enter_pread64");
        assert!(!c.contains("ebq_log2"), "{c}");
    }

    /// Without GROUP BY and WINDOW the group is slot 0 of a per-CPU array: histograms need no
    /// zero map, and sketches still key on the (all-zero) group key.
    #[test]
    fn a_single_slot_needs_no_zero_map_and_sketches_keep_their_key() {
        let c = generate_for("SELECT P50(count), HIST(count) FROM syscalls.sys_enter_pread64");
        assert!(c.contains("BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct ebq_value);\n} ebq_groups"), "{c}");
        assert_eq!(c.matches("bpf_map_lookup_elem(&ebq_groups, &zero)").count(), 1, "{c}");
        assert!(!c.contains("ebq_zero") && !c.contains("bpf_map_update_elem(&ebq_groups"), "{c}");
        assert!(c.contains("struct ebq_key key = {};") && c.contains(".group = key"), "{c}");
        let c = generate_for("SELECT COUNT(*), MIN(count) FROM syscalls.sys_enter_pread64");
        assert!(!c.contains("struct ebq_key") && c.contains("if (v->count == 0 || x < v->min_0)"), "{c}");
    }
}
