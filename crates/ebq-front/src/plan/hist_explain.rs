//! EXPLAIN lines for histogram slots and quantile sketches.

use super::{StructLayout, ValueSlot};
use crate::bind::{AggFunc, ScalarExpr};
use crate::types::DataType;

/// A value slot as EXPLAIN shows it: histograms with their bucketing and size.
pub(super) fn slot_text(sl: &ValueSlot, value: &StructLayout) -> String {
    let len = match value.fields[sl.field].ty {
        DataType::Buckets { len } => len,
        _ => 0,
    };
    match sl.func {
        AggFunc::Hist(crate::hist::Log2::Floor) => format!("HIST({}): {len} log2 buckets inline", sl.arg),
        AggFunc::Hist(crate::hist::Log2::Ceil) => format!(
            "HIST({}): {len} log2 buckets inline, (2^k, 2^(k+1)] as Prometheus/OTel bucket (exporter bucketing)",
            sl.arg
        ),
        AggFunc::Lhist(l) => format!(
            "LHIST({}, {}, {}, {}): {} linear buckets + under/overflow inline",
            sl.arg,
            l.min,
            l.max,
            l.step,
            l.buckets()
        ),
        AggFunc::ApproxCountDistinct => format!(
            "APPROX_COUNT_DISTINCT({}): HyperLogLog, {} one-byte registers inline (standard error {:.2} %)",
            sl.arg,
            crate::hll::REGISTERS,
            crate::hll::STANDARD_ERROR * 100.0
        ),
        AggFunc::ApproxTopK { k, .. } => match &sl.weight {
            Some(w) => {
                let w = w.to_string();
                format!("APPROX_TOP_K({}, {k}, {w}): {}", sl.arg, crate::topk::explain(k, Some(&w)))
            }
            None => format!("APPROX_TOP_K({}, {k}): {}", sl.arg, crate::topk::explain(k, None)),
        },
        f => format!("{f}({})", sl.arg),
    }
}

/// The sketch map line.
pub(super) fn sketch_line(sketches: &[ScalarExpr], max: u32) -> String {
    let args: Vec<String> = sketches.iter().map(|a| a.to_string()).collect();
    format!(
        "[kernel] Sketch     quantiles of [{}]: exponential buckets, OTel scale 6 = Prometheus schema 6 (64 per power \
         of two, exact below 92, within 1.09 % relative; each argument also summed) in PERCPU_HASH ebq_sketch (max {max} \
         buckets; one more lookup per event and argument)",
        args.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::super::{plan, KernelOutput, PhysicalPlan, PlanOptions, UserSource};
    use crate::catalog::Catalog;
    use crate::error::Result;

    fn physical(sql: &str) -> Result<PhysicalPlan> {
        let cat = Catalog::fixture();
        let q = crate::parse::parse_query(sql)?;
        let l = crate::bind::bind(&q, &cat)?;
        plan(sql, &l, &cat, &PlanOptions::default())
    }

    #[test]
    fn explain_shows_buckets_and_the_sketch() {
        let p = physical(
            "SELECT fd, HIST(count), LHIST(count, 0, 400, 100), P50(count), P99(count) FROM syscalls.sys_enter_pread64 GROUP BY fd",
        )
        .unwrap();
        assert_eq!(
            p.explain(),
            format!(
            "[kernel] Attach     tracepoint:syscalls:sys_enter_pread64 (BPF_PROG_TYPE_TRACING, tp_btf)
[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)
[kernel] Via        tracepoint:syscalls:sys_enter_pread64: raw sys_enter (tp_btf), system call 17 checked first; {AUTO_RAW}
[kernel] Aggregate  keys=[fd] values=[count, HIST(count): 65 log2 buckets inline, LHIST(count, 0, 400, 100): 4 linear buckets + under/overflow inline, SUM(count)] in PERCPU_HASH ebq_groups (max 10240 groups; key 8 B, value 584 B; one lookup per event)
[kernel] Sketch     quantiles of [count]: exponential buckets, OTel scale 6 = Prometheus schema 6 (64 per power of two, exact below 92, within 1.09 % relative; each argument also summed) in PERCPU_HASH ebq_sketch (max 262144 buckets; one more lookup per event and argument)
[kernel] Window     none: one result at the end (or every --interval, cumulative)
[user]   Merge      per-CPU values: add counts and sums, min of MINs, max of MAXes, add bucket counts
[user]   Project    fd, HIST(count), LHIST(count, 0, 400, 100), P50(count) = QUANTILE(count, 0.5), P99(count) = QUANTILE(count, 0.99)
",
            AUTO_RAW = crate::plan::syscall_attach::AUTO_RAW
        )
        );
        let KernelOutput::Aggregate { sketches, .. } = &p.programs[0].output else { panic!() };
        assert_eq!(sketches.len(), 1, "P50 and P99 of one argument share a sketch");
        assert_eq!(p.user.inputs[3], UserSource::Quantile { sketch: 0, ppm: 500_000 });
    }

    #[test]
    fn histogram_values_leave_the_stack_but_must_fit_a_map_value() {
        // 5 × 1002 counters need 40 KiB: over the kernel's 32 KiB per-CPU value.
        let many: Vec<String> = (0..5).map(|i| format!("LHIST(count, {i}, {}, 1)", 1000 + i)).collect();
        let e = physical(&format!("SELECT {} FROM syscalls.sys_enter_pread64", many.join(", "))).unwrap_err();
        assert!(e.to_string().contains("limit is 32768"), "{e}");
        // Three LHISTs of 1002 counters (24 KiB) fit: the value is not on the stack.
        let three = many[..3].join(", ");
        let p = physical(&format!("SELECT comm, {three}, P50(count) FROM syscalls.sys_enter_pread64 GROUP BY comm"));
        assert!(p.is_ok(), "{p:?}");
    }
}
