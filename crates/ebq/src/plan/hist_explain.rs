//! EXPLAIN lines for histogram slots and quantile sketches.

use super::{StructLayout, ValueSlot, SKETCH_MAX_BUCKETS};
use crate::bind::{AggFunc, ScalarExpr};
use crate::types::DataType;

/// A value slot as EXPLAIN shows it: histograms with their bucketing and size.
pub(super) fn slot_text(sl: &ValueSlot, value: &StructLayout) -> String {
    let len = match value.fields[sl.field].ty {
        DataType::Buckets { len } => len,
        _ => 0,
    };
    match sl.func {
        AggFunc::Hist => format!("HIST({}): {len} log2 buckets inline", sl.arg),
        AggFunc::Lhist(l) => format!(
            "LHIST({}, {}, {}, {}): {} linear buckets + under/overflow inline",
            sl.arg,
            l.min,
            l.max,
            l.step,
            l.buckets()
        ),
        f => format!("{f}({})", sl.arg),
    }
}

/// The sketch map line.
pub(super) fn sketch_line(sketches: &[ScalarExpr]) -> String {
    let args: Vec<String> = sketches.iter().map(|a| a.to_string()).collect();
    format!(
        "[kernel] Sketch     quantiles of [{}]: log-linear buckets (exact below 128, then 64 per power of two; \
         midpoint within 1/128 relative) in PERCPU_HASH ebq_sketch (max {SKETCH_MAX_BUCKETS} buckets; one more lookup per event and argument)",
        args.join(", ")
    )
}
