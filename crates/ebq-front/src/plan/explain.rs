//! EXPLAIN: the plan as text, one operator per line, tagged `[kernel]` or `[user]`.

use super::{KernelOutput, KernelPlan, KernelWindow, PhysicalPlan, UserSource};
use crate::bind::Input;
use std::fmt::Write;

impl PhysicalPlan {
    /// The operator tree with its kernel/user split (without the generated C).
    pub fn explain(&self) -> String {
        if let Some(join) = self.window_join() {
            return join.explain(self);
        }
        let mut s = String::new();
        for k in &self.programs {
            s.push_str(&k.explain());
        }
        let rows = self.programs.iter().all(|k| matches!(k.output, KernelOutput::Rows { .. }));
        self.user_explain(&mut s, rows);
        s
    }
}

impl KernelPlan {
    /// The kernel operators and the merge or decode of their output: where
    /// events come from, what the program reads and filters, then how its
    /// output leaves the kernel (one step each, in that order).
    pub(super) fn explain(&self) -> String {
        let mut s = String::new();
        self.explain_source(&mut s);
        self.explain_reads(&mut s);
        match &self.output {
            KernelOutput::Aggregate { .. } => self.explain_aggregate(&mut s),
            KernelOutput::Rows { record, fold: Some(fold), .. } => {
                let _ = writeln!(
                    s,
                    "[kernel] Fold       {} B rows built in a per-CPU slot and handed to ebq_fold ({}); its maps: {}",
                    record.size,
                    fold.name,
                    fold.maps.join(", ")
                );
                let _ = writeln!(s, "[user]   Read       the fold's maps after the run (no rows streamed)");
            }
            KernelOutput::Rows { record, ringbuf_bytes, wakeup_bytes, per_cpu_rings, .. } => {
                let ring = match per_cpu_rings {
                    true => {
                        format!("the CPU's own RINGBUF (ARRAY_OF_MAPS ebq_rows, one ring of {ringbuf_bytes} B per CPU)")
                    }
                    false => format!("RINGBUF ebq_rows ({ringbuf_bytes} B)"),
                };
                let _ = writeln!(
                    s,
                    "[kernel] Emit       {} B records to {ring}; wake-up at {wakeup_bytes} B waiting, else 50 ms poll",
                    record.size
                );
                let _ = writeln!(s, "[user]   Decode     records → Arrow columns");
            }
        }
        s
    }

    /// Where the events come from: a union's branches (each with its own
    /// attachment), a pairing's two events, or one attached event and its
    /// scope; then how the attachment was reached.
    fn explain_source(&self, s: &mut String) {
        let k = self;
        if !k.branches.is_empty() {
            let map = match &k.output {
                KernelOutput::Aggregate { .. } => "the one group map ebq_groups",
                KernelOutput::Rows { fold: Some(_), .. } => "rows into the one kernel fold",
                KernelOutput::Rows { .. } => "the one ring buffer ebq_rows",
            };
            let planned = k.branches.len() + 1;
            let written = planned + k.left_out.len();
            let count = match written == planned {
                true => format!("{planned} branches"),
                false => format!("{planned} of {written} branches"),
            };
            let _ = writeln!(
                s,
                "[kernel] Union      {count}, one program each in one object, all writing {map}; seen/matched/dropped/missed summed"
            );
            for note in &k.left_out {
                let _ = writeln!(s, "[kernel] Left out   {note}");
            }
            for (i, b) in std::iter::once(k).chain(&k.branches).enumerate() {
                s.push_str(&b.branch_explain(i));
            }
        } else if let Some(p) = &k.pairing {
            s.push_str(&p.explain());
            let _ = writeln!(
                s,
                "[kernel] Attach     {} ({}, closes pairs)",
                k.event.event_description(),
                k.event.source.program_type()
            );
        } else {
            let _ =
                writeln!(s, "[kernel] Attach     {} ({})", k.event.event_description(), k.event.source.program_type());
            let _ = writeln!(s, "[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)");
        }
        if k.branches.is_empty() {
            for note in &k.attach_notes {
                let _ = writeln!(s, "[kernel] Via        {note}");
            }
        }
    }

    /// What the program reads besides the event (files, mapped pages) and
    /// the filter it applies; a union's branches print their own filters.
    fn explain_reads(&self, s: &mut String) {
        let k = self;
        if k.reads_files() {
            let how = if k.typed_files {
                "typed loads from the task's BTF pointer (the fd slot too, through bpf_rdonly_cast; no helper call)"
            } else {
                "bpf_probe_read_kernel per hop (the kernel's BTF has no bpf_rdonly_cast)"
            };
            let _ = writeln!(s, "[kernel] Files      {how}");
        }
        if k.reads_pages_mapped() {
            let _ = writeln!(
                s,
                "[kernel] Count      the process's file pages (mm->rss_stat[MM_FILEPAGES], summed over CPUs) at every \
                 fault (tp_btf:exceptions:page_fault_user and page_fault_kernel) and the page of its first filemap \
                 fault (tp_btf:filemap:mm_filemap_fault), per thread in TASK_STORAGE ebq_file_pages: pages_mapped is \
                 the count at the fault-around less the thread's last, less that page (the fault counted it)"
            );
        }
        if k.finishes_faults() {
            let _ = writeln!(
                s,
                "[kernel] Count      and at kmem:rss_stat (tp_btf, before the query's program) the mappings no \
                 fault-around tracepoint sees, told apart by the thread's RCU read-lock nesting: a filemap fault's \
                 finish (its whole folio; at most {} level(s) deeper than the fault's start) and, 6.5 on, a PMD \
                 fault-around (one level shallower than mm_filemap_map_pages, learned there into ARRAY \
                 ebq_around_depth); the file is the fault's mapping, or the VMA at its address (bpf_find_vma)",
                k.finish_depth
            );
        }
        if let (Some(f), true) = (&k.filter, k.branches.is_empty()) {
            let f = k.pairing.as_ref().map_or_else(|| f.to_string(), |p| f.qualified(&p.names.1));
            let _ = writeln!(s, "[kernel] Filter     {f}");
        }
    }

    /// A group map's lines: keys and values with the map that holds them,
    /// sketches, late names, the window, and user space's merge (and
    /// COUNT(DISTINCT)'s collapse of the hidden key).
    fn explain_aggregate(&self, s: &mut String) {
        let k = self;
        let KernelOutput::Aggregate { value, slots, hidden_keys, sketches, sketch_buckets, late_names, .. } = &k.output
        else {
            return;
        };
        let mut aggs = vec!["count".to_string()];
        if k.branches.is_empty() {
            aggs.extend(slots.iter().map(|sl| super::hist_explain::slot_text(sl, value)));
        } else {
            // Each branch's Compute line says what it adds to each field.
            aggs.extend(slots.iter().map(|sl| format!("{} {}", sl.func, value.fields[sl.field].name)));
        }
        let _ = writeln!(
            s,
            "[kernel] Aggregate  keys=[{}] values=[{}] in {}",
            k.aggregate_keys().join(", "),
            aggs.join(", "),
            k.group_store()
        );
        if !sketches.is_empty() {
            let _ = writeln!(s, "{}", super::hist_explain::sketch_line(sketches, *sketch_buckets));
        }
        if let Some(late) = late_names {
            let names: Vec<String> = late
                .names
                .iter()
                .map(|n| format!("{} by {}", n.kind.column().name(), n.kind.identity().name()))
                .collect();
            let _ = writeln!(
                s,
                "[kernel] Names      late: {} in the key; a new group writes its names into PERCPU_HASH \
                 ebq_names, user space puts them back (groups of one name merge)",
                names.join(", ")
            );
        }
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
        let buckets = if sketches.is_empty() && !slots.iter().any(|sl| sl.func.is_histogram()) {
            ""
        } else {
            ", add bucket counts"
        };
        let _ =
            writeln!(s, "[user]   Merge      per-CPU values: add counts and sums, min of MINs, max of MAXes{buckets}");
        if *hidden_keys > 0 {
            let _ = writeln!(
                s,
                "[user]   Distinct   groups that differ only in the hidden key are one row, their values merged \
                 as above; COUNT(DISTINCT) = how many hidden keys it had (exact, up to --max-groups groups)"
            );
        }
    }

    /// The group key's fields as the Aggregate line names them: the
    /// expression (a union's branches compute it their own way: the field's
    /// name), a late name by its identity, COUNT(DISTINCT)'s hidden keys marked.
    fn aggregate_keys(&self) -> Vec<String> {
        let KernelOutput::Aggregate { key, key_fields, hidden_keys, late_names, .. } = &self.output else {
            return vec![];
        };
        let visible = key_fields.len() - hidden_keys;
        key_fields
            .iter()
            .enumerate()
            .map(|(i, (e, f))| {
                let mut e = if self.branches.is_empty() { e.to_string() } else { key.fields[*f].name.clone() };
                if let Some(n) = late_names.as_ref().and_then(|l| l.names.iter().find(|n| n.kernel == *f)) {
                    e = format!("{} (by {})", n.kind.column().name(), n.kind.identity().name());
                }
                if i < visible {
                    e
                } else {
                    format!("{e} (hidden, for COUNT(DISTINCT))")
                }
            })
            .collect()
    }

    /// The map the groups live in: one per-CPU slot without keys and
    /// windows, else a per-CPU hash (preallocated unless too big).
    fn group_store(&self) -> String {
        let KernelOutput::Aggregate { key, value, max_groups, single_slot, preallocated, .. } = &self.output else {
            return String::new();
        };
        if *single_slot {
            format!(
                "PERCPU_ARRAY ebq_groups, 1 slot (no GROUP BY, no window; value {} B; one inlined lookup per event)",
                value.size
            )
        } else {
            format!(
                "PERCPU_HASH ebq_groups (max {max_groups} groups; key {} B, value {} B; one lookup per event{})",
                key.size,
                value.size,
                if *preallocated {
                    ""
                } else {
                    "; too big to preallocate: entries are allocated as groups occur, and an allocation that fails in a burst of new groups counts in dropped"
                }
            )
        }
    }
}

impl KernelPlan {
    /// Branch `i` of a union: its program, attachment, filter and what it
    /// writes into each shared key and value field.
    fn branch_explain(&self, i: usize) -> String {
        let mut s = String::new();
        let function = if i == 0 { "ebq_query".to_string() } else { format!("ebq_query_{i}") };
        let closes = match &self.pairing {
            Some(p) => {
                s.push_str(&p.explain());
                ", closes pairs"
            }
            None => "",
        };
        let _ = writeln!(
            s,
            "[kernel] Attach     branch {}: {} ({}{closes}, {function})",
            self.union_branch + 1,
            self.event.event_description(),
            self.event.source.program_type()
        );
        let _ = writeln!(s, "[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)");
        for note in &self.attach_notes {
            let _ = writeln!(s, "[kernel] Via        {note}");
        }
        if let Some(f) = &self.filter {
            let _ = writeln!(s, "[kernel] Filter     {f}");
        }
        let writes: Vec<String> = match &self.output {
            KernelOutput::Aggregate { key, key_fields, value, slots, sketches, .. } => key_fields
                .iter()
                .map(|(e, f)| format!("key.{} = {e}", key.fields[*f].name))
                .chain(slots.iter().map(|sl| match &sl.weight {
                    Some(w) => format!("{} ← {} weighing {w}", value.fields[sl.field].name, sl.arg),
                    None => format!("{} ← {}", value.fields[sl.field].name, sl.arg),
                }))
                .chain(sketches.iter().enumerate().map(|(j, e)| format!("sketch {j} ← {e}")))
                .collect(),
            KernelOutput::Rows { record, fields, .. } => {
                fields.iter().map(|(e, f)| format!("{} = {e}", record.fields[*f].name)).collect()
            }
        };
        if !writes.is_empty() {
            let _ = writeln!(s, "[kernel] Compute    {}", writes.join(", "));
        }
        s
    }
}

impl super::Pairing {
    /// The start programs and the pairing map (the caller names the end
    /// event that closes pairs).
    fn explain(&self) -> String {
        let p = self;
        let mut s = String::new();
        let (start, end) = &p.names;
        for b in p.starts() {
            let _ = writeln!(
                s,
                "[kernel] Attach     {} ({}, opens pairs)",
                b.start.event_description(),
                b.start.source.program_type()
            );
            let _ = writeln!(
                s,
                "[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope), at the start event"
            );
            // A union's filters read each branch's own columns, named as in its WHERE.
            let f = b.start_filter.as_ref().map(|f| if p.also.is_empty() { f.qualified(start) } else { f.to_string() });
            if let Some(f) = f {
                let _ = writeln!(s, "[kernel] Filter     {f} (before a pair opens)");
            }
        }
        s.push_str(&p.middle_explain());
        let keys: Vec<String> =
            p.keys.iter().map(|(a, b, _)| format!("{} = {}", a.qualified(start), b.qualified(end))).collect();
        let carried: Vec<String> = p
            .carried
            .iter()
            .map(|(c, _, _)| match p.reads_at_end(c) {
                true => format!("{} (its pointer; read at the end event)", c.name()),
                false => c.name().to_string(),
            })
            .collect();
        let map = if p.per_thread {
            format!(
                "TASK_STORAGE {} (one open pair per thread, in the thread's own storage: a thread makes one system \
                 call at a time; key {} B kept and compared",
                p.map_name(),
                p.key.size
            )
        } else {
            format!("HASH {} (max {} open; key {} B", p.map_name(), p.max_pending, p.key.size)
        };
        // A pair that carries no column still stores its entry (the start's time, or padding).
        let carries = match carried.is_empty() {
            true => "carries no column".to_string(),
            false => format!("carries [{}]", carried.join(", ")),
        };
        let _ = writeln!(s, "[kernel] Pair       on [{}] in {map}; {carries} in {} B)", keys.join(", "), p.stash.size);
        s
    }
}

impl super::Pairing {
    /// A chain's middle program: where it attaches, the key it finds its
    /// pair by, and what it adds to which field of the pair (offsets in the
    /// pair's value struct). Empty without a middle.
    fn middle_explain(&self) -> String {
        let Some(m) = &self.middle else { return String::new() };
        let mut s = String::new();
        let _ = writeln!(
            s,
            "[kernel] Attach     {} ({}, adds to its open pair: ebq_pair_middle)",
            m.event.event_description(),
            m.event.source.program_type()
        );
        let _ = writeln!(
            s,
            "[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope), at the middle event"
        );
        let start = &self.names.0;
        let keys: Vec<String> = self
            .keys
            .iter()
            .zip(&m.keys)
            .map(|((a, _, _), b)| format!("{} = {}", a.qualified(start), b.qualified(&m.name)))
            .collect();
        let adds: Vec<String> = m
            .aggs
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let name = self.middle_field(i)?;
                let f = self.stash.fields.iter().find(|f| f.name == name)?;
                let add =
                    if a.func == crate::bind::AggFunc::Count { "1".to_string() } else { a.arg.qualified(&m.name) };
                Some(format!("{name} (+{} {}) += {add}", f.offset, a.ty))
            })
            .collect();
        let _ = writeln!(
            s,
            "[kernel] Middle     finds its pair on [{}]; atomically {}; no open pair: ignored, counted middle_unmatched",
            keys.join(", "),
            adds.join(", ")
        );
        s
    }
}

impl PhysicalPlan {
    /// The user-space operators: HAVING, projection, sort and limit, over
    /// the whole stream of rows (`rows`) or each window.
    pub(super) fn user_explain(&self, s: &mut String, rows: bool) {
        let u = &self.user;
        let text = |e: &crate::bind::PostExpr| post_text(e, &u.input_names, &u.columns);
        if let Some(h) = &u.having {
            let _ = writeln!(s, "[user]   Having     {}", text(h));
        }
        let cols: Vec<String> = u
            .columns
            .iter()
            .map(|c| match &c.expr {
                crate::bind::PostExpr::Ref(Input { index, .. }) if matches!(u.inputs[*index], UserSource::Avg(_)) => {
                    format!("{} = sum / count", c.name)
                }
                crate::bind::PostExpr::Ref(Input { index, .. }) if u.input_names[*index] == c.name => c.name.clone(),
                e => format!("{} = {}", c.name, text(e)),
            })
            .collect();
        let _ = writeln!(s, "[user]   Project    {}", cols.join(", "));
        if !u.order_by.is_empty() {
            let keys: Vec<String> =
                u.order_by.iter().map(|k| format!("{}{}", text(&k.expr), if k.desc { " DESC" } else { "" })).collect();
            let scope = if rows { "all rows, at the end" } else { "each window" };
            let _ = writeln!(s, "[user]   Sort       {} ({scope})", keys.join(", "));
        }
        if let Some(l) = u.limit {
            let scope = match (rows, u.order_by.is_empty()) {
                (true, true) => "rows; the query stops when reached",
                (true, false) => "rows",
                _ => "rows per window",
            };
            let _ = writeln!(s, "[user]   Limit      {l} {scope}");
        }
    }
}

/// A user-space expression with its inputs and outputs named.
fn post_operand(e: &crate::bind::PostExpr, inputs: &[String], outputs: &[super::UserColumn]) -> String {
    use crate::bind::IsOperation;
    if e.is_operation() {
        format!("({})", post_text(e, inputs, outputs))
    } else {
        post_text(e, inputs, outputs)
    }
}

pub(super) fn post_text(e: &crate::bind::PostExpr, inputs: &[String], outputs: &[super::UserColumn]) -> String {
    use crate::bind::PostExpr as P;
    match e {
        P::Ref(Input { index, .. }) => inputs[*index].clone(),
        P::Output { index, .. } => outputs[*index].name.clone(),
        P::Int { value, ty } if ty.is_signed() => (*value as i64).to_string(),
        P::Int { value, .. } => value.to_string(),
        P::Float(v) => v.to_string(),
        // An operand that is itself an operation in parentheses, the whole without (as `Display`).
        P::Binary { op, left, right, .. } => {
            format!("{} {} {}", post_operand(left, inputs, outputs), op.c_op(), post_operand(right, inputs, outputs))
        }
        P::Not(x) => format!("NOT {}", post_operand(x, inputs, outputs)),
        P::Neg(x) => format!("-{}", post_operand(x, inputs, outputs)),
        P::SyscallName { nr, .. } => format!("syscall_name({})", post_text(nr, inputs, outputs)),
        P::Cgroup(what, x) => format!("{}({})", what.name(), post_text(x, inputs, outputs)),
        P::DevStr(x) => format!("dev_str({})", post_text(x, inputs, outputs)),
        P::LinuxName(which, x) => format!("{}({})", which.function(), post_text(x, inputs, outputs)),
        P::PartName { disk, partno } => {
            format!("part_name({}, {})", post_text(disk, inputs, outputs), post_text(partno, inputs, outputs))
        }
        P::ReqFlags { flags, .. } => format!("req_flags({})", post_text(flags, inputs, outputs)),
    }
}
