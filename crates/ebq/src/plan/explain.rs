//! EXPLAIN: the plan as text, one operator per line, tagged `[kernel]` or `[user]`.

use super::{KernelOutput, KernelWindow, PhysicalPlan, UserSource};
use std::fmt::Write;

impl PhysicalPlan {
    /// The operator tree with its kernel/user split (without the generated C).
    pub fn explain(&self) -> String {
        let k = &self.kernel;
        let mut s = String::new();
        let _ = writeln!(s, "[kernel] Attach     {} (BPF_PROG_TYPE_TRACEPOINT)", k.event.event_description());
        let _ = writeln!(s, "[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)");
        if let Some(f) = &k.filter {
            let _ = writeln!(s, "[kernel] Filter     {f}");
        }
        match &k.output {
            KernelOutput::Aggregate { key, key_fields, value, slots, max_groups } => {
                let keys: Vec<String> = key_fields.iter().map(|(e, _)| e.to_string()).collect();
                let mut aggs = vec!["count".to_string()];
                aggs.extend(slots.iter().map(|sl| format!("{}({})", sl.func, sl.arg)));
                let _ = writeln!(
                    s,
                    "[kernel] Aggregate  keys=[{}] values=[{}] in PERCPU_HASH ebq_groups (max {max_groups} groups; key {} B, value {} B; one lookup per event)",
                    keys.join(", "),
                    aggs.join(", "),
                    key.size,
                    value.size
                );
                let window = match k.window {
                    KernelWindow::None => "none: one result at the end (or every --interval, cumulative)".to_string(),
                    KernelWindow::Time { size_ms } => {
                        format!("tumbling time {size_ms} ms: user-space timer advances ebq_window, waits for in-flight programs, drains the closed window")
                    }
                    KernelWindow::Count { n } => {
                        format!("tumbling count {n}: kernel numbers matching events (ebq_seq), window = seq / {n}")
                    }
                };
                let _ = writeln!(s, "[kernel] Window     {window}");
                let _ =
                    writeln!(s, "[user]   Merge      per-CPU values: add counts and sums, min of MINs, max of MAXes");
            }
            KernelOutput::Rows { record, ringbuf_bytes, wakeup_bytes, .. } => {
                let _ = writeln!(
                    s,
                    "[kernel] Emit       {} B records to RINGBUF ebq_rows ({ringbuf_bytes} B; wake-up at {wakeup_bytes} B waiting, else 50 ms poll)",
                    record.size
                );
                let _ = writeln!(s, "[user]   Decode     records → Arrow columns");
            }
        }
        let cols: Vec<String> = self
            .user
            .columns
            .iter()
            .map(|c| match c.source {
                UserSource::Avg(_) => format!("{} = sum / count", c.name),
                _ => c.name.clone(),
            })
            .collect();
        let _ = writeln!(s, "[user]   Project    {}", cols.join(", "));
        s
    }
}
