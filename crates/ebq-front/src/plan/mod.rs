//! Plan: [`LogicalPlan`] → [`PhysicalPlan`], the kernel/user split.
//!
//! The kernel part filters, projects and aggregates per event; the user part
//! merges per-CPU values, closes windows and computes what needs division
//! (AVG). BPF limits (stack, key and value sizes) are checked here so users
//! get a plan error, never a verifier log.

mod explain;
mod hist_explain;
pub mod late_names;
mod layout;
mod pairing;
mod record_shadow;
pub mod row_fold;
mod single_slot;
mod stages;
mod stream_join;
mod string_buffers;
pub mod syscall_attach;

pub use layout::{StructField, StructLayout};
pub use pairing::{Pairing, OPENED};
pub use row_fold::RowFold;
pub use stages::StageLimit;
pub use stream_join::{WindowJoin, JOIN_GRACE_MS};
pub use string_buffers::{in_string_scratch, may_be_unreadable, scratch_bytes, slot_string_reads};
pub use syscall_attach::SyscallAttach;

use crate::bind::{
    AggCall, AggFunc, BoundEvent, ColumnSource, EventSource, GroupExpr, Input, LogicalPlan, OutputColumn, PostExpr,
    QueryBody, ScalarExpr, SortKey, TopKPart, Window,
};
use crate::catalog::{Catalog, TracepointFormat};
use crate::error::{Error, Result, Stage};
use crate::parse::WindowKind;
use crate::types::DataType;

/// Tunables that change the physical plan.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// Maximum groups per window held in the kernel; more are counted as dropped.
    pub max_groups: u32,
    /// Ring buffer size for row queries (a power of two ≥ 4096).
    pub ringbuf_bytes: u32,
    /// Wake the reader once this many bytes are waiting (row queries); it also
    /// polls every 50 ms, so a quiet stream is never stuck.
    pub wakeup_bytes: u32,
    /// JOINs: most pairs open at once (starts waiting for their end event);
    /// starts beyond it are counted in `pending_full`.
    pub max_pending: u32,
    /// JOINs of system-call events on the thread keep their open pairs in
    /// task storage ([`pairing::per_thread`]); off (`--pairs hash`), every
    /// JOIN pairs in a HASH aged by `--max-pair-age`.
    pub thread_pairs: bool,
    /// Entries of the quantile-sketch map (QUANTILE, P50…); more are counted as dropped.
    pub sketch_buckets: u32,
    /// `-c` scope: most processes tracked at once (the command and its
    /// descendants, `ebq_pids`); children forked beyond it are not traced and
    /// are counted in `untracked`, never silently lost.
    pub max_tracked: u32,
    /// `ebq bench stages` only: row queries stop after this pipeline stage.
    pub stage_limit: Option<StageLimit>,
    /// Where `syscalls:*` events attach: classic or raw tracepoints (`--attach`).
    pub attach: SyscallAttach,
    /// `raw_syscalls:sys_enter` / `sys_exit` follow `attach` too (auto: raw,
    /// [`syscall_attach::AUTO_EVERY_CALL_RAW`]); off, they stay classic, as
    /// bundles made before the option were planned.
    pub every_call_raw: bool,
    /// Row queries: one ring buffer per CPU (`--rings per-cpu`, the default)
    /// rather than one shared by all (`--rings shared`). A shared ring's
    /// reserve takes one spinlock, which CPUs emitting at once contend for.
    pub per_cpu_rings: bool,
    /// How HIST buckets close on powers of two: `Floor` (`[2^k, 2^(k+1))`, as
    /// bpftrace prints them) by default; the exporters plan `Ceil`, whose
    /// counts are Prometheus native / OTel exponential buckets at scale 0.
    pub hist_buckets: crate::hist::Log2,
    /// Group by a file name's identity in the kernel and name each group once
    /// ([`late_names`]); off for pinned maps, whose readers see the kernel key.
    pub late_names: bool,
    /// Row queries: hand each row to this C in the kernel instead of a ring
    /// buffer ([`row_fold`]; the library's extension point, not SQL).
    pub row_fold: Option<std::sync::Arc<RowFold>>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_groups: 10240,
            ringbuf_bytes: 8 << 20,
            wakeup_bytes: 256 << 10,
            max_pending: 10240,
            thread_pairs: true,
            sketch_buckets: SKETCH_MAX_BUCKETS,
            max_tracked: 65536,
            stage_limit: None,
            attach: SyscallAttach::Auto,
            every_call_raw: true,
            per_cpu_rings: true,
            hist_buckets: crate::hist::Log2::Floor,
            late_names: true,
            row_fold: None,
        }
    }
}

/// BPF stack the generated program may use for keys, values and string locals.
/// The kernel allows 512 bytes; the rest is left for clang's temporaries.
pub const STACK_BUDGET: u32 = 400;

/// How windows are cut in the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelWindow {
    /// No window: one window spanning the whole run.
    None,
    /// Time windows: user space bumps `ebq_window` every `size_ms`.
    Time {
        /// Window length in milliseconds.
        size_ms: u64,
    },
    /// Count windows: the kernel numbers matching events; window = number / n.
    Count {
        /// Events per window.
        n: u64,
    },
}

/// Default entries of the quantile-sketch map (one per (window, group,
/// argument, bucket)); allocated on use, so the size is a bound, not a reservation.
pub const SKETCH_MAX_BUCKETS: u32 = 1 << 18;

/// The largest per-CPU map value the kernel accepts (PCPU_MIN_UNIT_SIZE).
pub const MAX_VALUE_BYTES: u32 = 32 << 10;

/// An aggregate slot in the value struct (besides the shared `count`).
#[derive(Debug, Clone, PartialEq)]
pub struct ValueSlot {
    /// Sum, Min, Max, Hist or Lhist (AVG uses a Sum slot and the count;
    /// histograms an array of bucket counters).
    pub func: AggFunc,
    /// The per-event argument.
    pub arg: ScalarExpr,
    /// APPROX_TOP_K's weight, added per event instead of 1 (`None`: 1, and every other slot).
    pub weight: Option<ScalarExpr>,
    /// Index of the slot's field in the value layout.
    pub field: usize,
}

impl ValueSlot {
    /// The per-event expressions the slot evaluates: its argument, and its weight if any.
    pub fn exprs(&self) -> impl Iterator<Item = &ScalarExpr> {
        std::iter::once(&self.arg).chain(&self.weight)
    }
}

/// What the kernel part produces.
#[derive(Debug, Clone, PartialEq)]
pub enum KernelOutput {
    /// Per-CPU hash of groups keyed by (window, keys).
    Aggregate {
        /// Key struct; with a WINDOW (or no key at all) field 0 is `window`.
        key: StructLayout,
        /// For each GROUP BY key, its expression and field index in `key`.
        key_fields: Vec<(ScalarExpr, usize)>,
        /// Value struct; field 0 is `count`.
        value: StructLayout,
        /// Sum/min/max slots.
        slots: Vec<ValueSlot>,
        /// Map capacity.
        max_groups: u32,
        /// Trailing entries of `key_fields` that are not output keys: the
        /// COUNT(DISTINCT) argument, grouped on in the kernel and counted in user space.
        hidden_keys: usize,
        /// Arguments with a quantile sketch (QUANTILE, P50…), numbered by
        /// position: the `agg` field of the sketch map's key.
        sketches: Vec<ScalarExpr>,
        /// Capacity of the sketch map.
        sketch_buckets: u32,
        /// No GROUP BY, no hidden key, no window: the one group lives in
        /// slot 0 of a per-CPU array, not the hash (see `single_slot`).
        single_slot: bool,
        /// A new group's value is zeroed on the BPF stack (`struct ebq_value
        /// fresh = {}`); when false it is copied from the all-zero `ebq_zero`
        /// map (see [`value_fits_stack`]).
        value_on_stack: bool,
        /// `ebq_groups` is preallocated (see [`group_map_preallocated`]).
        preallocated: bool,
        /// Names grouped by identity in the kernel (`key` is then the kernel's
        /// key, and this says how it maps onto the key user space decodes).
        late_names: Option<late_names::LateNames>,
    },
    /// One record per matching event through a ring buffer.
    Rows {
        /// Record struct.
        record: StructLayout,
        /// For each output column, its expression and field index in `record`.
        fields: Vec<(ScalarExpr, usize)>,
        /// Ring buffer size.
        ringbuf_bytes: u32,
        /// Wake-up threshold.
        wakeup_bytes: u32,
        /// One ring per CPU (an ARRAY_OF_MAPS the runtime fills), not one
        /// shared ring ([`PlanOptions::per_cpu_rings`]).
        per_cpu_rings: bool,
        /// `ebq bench stages`: the last stage the program runs (None: all).
        stage_limit: Option<StageLimit>,
        /// Rows go to this C in the kernel, not to a ring ([`row_fold`]).
        fold: Option<std::sync::Arc<RowFold>>,
    },
}

impl KernelOutput {
    /// The per-event expressions the output evaluates.
    pub fn exprs(&self) -> Vec<&ScalarExpr> {
        match self {
            KernelOutput::Aggregate { key_fields, slots, sketches, .. } => key_fields
                .iter()
                .map(|(e, _)| e)
                .chain(slots.iter().flat_map(ValueSlot::exprs))
                .chain(sketches)
                .collect(),
            KernelOutput::Rows { fields, .. } => fields.iter().map(|(e, _)| e).collect(),
        }
    }
}

impl KernelOutput {
    /// The layout its per-event fields are written to (a row's record, a
    /// group's key) and those fields (expression, index in the layout).
    pub fn layout_and_fields(&mut self) -> (&mut StructLayout, &[(ScalarExpr, usize)]) {
        match self {
            KernelOutput::Rows { record, fields, .. } => (record, fields),
            KernelOutput::Aggregate { key, key_fields, .. } => (key, key_fields),
        }
    }

    /// The same output with every per-event expression rewritten by `f`
    /// (layouts unchanged): a union branch's program.
    pub fn map_exprs(mut self, f: &impl Fn(&ScalarExpr) -> ScalarExpr) -> KernelOutput {
        match &mut self {
            KernelOutput::Aggregate { key_fields, slots, sketches, .. } => {
                key_fields.iter_mut().for_each(|(e, _)| *e = f(e));
                slots.iter_mut().for_each(|s| {
                    s.arg = f(&s.arg);
                    s.weight = s.weight.as_ref().map(f);
                });
                sketches.iter_mut().for_each(|e| *e = f(e));
            }
            KernelOutput::Rows { fields, .. } => fields.iter_mut().for_each(|(e, _)| *e = f(e)),
        }
        self
    }
}

impl KernelPlan {
    /// This program and a top-level union's further branches: every program
    /// of the object that makes rows or updates groups.
    pub fn with_branches(&self) -> impl Iterator<Item = &KernelPlan> {
        std::iter::once(self).chain(&self.branches)
    }

    /// Every pairing of the object: this program's JOIN, or each union
    /// branch's own, in branch order (the order of their maps in the contract).
    pub fn pairings(&self) -> impl Iterator<Item = &Pairing> {
        self.with_branches().filter_map(|k| k.pairing.as_ref())
    }

    /// Every event a program of this object attaches to: each branch's
    /// event, then every pairing's start events, then a chain's middle event.
    pub fn events(&self) -> impl Iterator<Item = &BoundEvent> {
        let middles = self.pairings().filter_map(|p| p.middle.as_ref().map(|m| &m.event));
        self.with_branches().map(|b| &b.event).chain(self.pairings().flat_map(|p| p.start_events())).chain(middles)
    }

    /// The events this object traces, as a message names them: `a JOIN b`,
    /// and a union's branches joined by `UNION ALL`.
    pub fn events_description(&self) -> String {
        let one = |k: &KernelPlan| match &k.pairing {
            Some(p) => format!("{} JOIN {}", p.start_description(), k.event.event_description()),
            None => k.event.event_description(),
        };
        self.with_branches().map(one).collect::<Vec<_>>().join(" UNION ALL ")
    }

    /// True when the program reads a file column: the end (or only) event,
    /// or a JOIN's start event (its filter, keys and carried columns). Such
    /// programs are compiled against the kernel's BTF types.
    pub fn reads_files(&self) -> bool {
        self.reads_column(&|c| matches!(c, ColumnSource::File { .. }))
    }

    /// True when the program reads `pages_mapped`, or the fault's file at
    /// `kmem:rss_stat`: it then counts file pages at every fault
    /// (`codegen::mapped_pages`), which is where that file is kept too.
    pub fn reads_pages_mapped(&self) -> bool {
        self.reads_column(&|c| matches!(c, ColumnSource::File { column: crate::catalog::FileColumn::PagesMapped, .. }))
            || self.finishes_faults()
    }

    /// True when a program of this object is at `kmem:rss_stat` and the object
    /// reads a file column: a fourth counting program there tells a filemap
    /// fault's finish from every other change of the counters.
    pub fn finishes_faults(&self) -> bool {
        self.events().any(|e| crate::catalog::file_columns::is_finish_event(&e.format)) && self.reads_files()
    }

    /// True when the program reads `kstack` or `ustack`: it then has the
    /// `ebq_stacks` map.
    pub fn reads_stacks(&self) -> bool {
        use crate::catalog::SystemColumn::{Kstack, Ustack};
        self.reads_column(&|c| matches!(c, ColumnSource::System(Kstack | Ustack)))
    }

    /// True when any expression of the program (carried JOIN columns
    /// included, by the column they carry) reads a column `is` accepts.
    pub(crate) fn reads_column(&self, is: &dyn Fn(&ColumnSource) -> bool) -> bool {
        let mut found = false;
        self.visit_columns_read(&mut |c| found |= is(c));
        found
    }

    /// Calls `f` with every column any program of this object reads: its
    /// filter and output, a JOIN's start filters, keys and carried columns
    /// (by the column they carry), and the union branches'.
    pub fn visit_columns_read(&self, f: &mut dyn FnMut(&ColumnSource)) {
        let mut carried = |c: &ColumnSource| f(c.read_at_start());
        if let Some(p) = &self.pairing {
            p.carried.iter().for_each(|(c, _, _)| carried(c));
            // A union's further branches read their own columns.
            for b in &p.also {
                b.columns.iter().for_each(|(_, own)| carried(own));
            }
        }
        for e in self.own_exprs() {
            e.visit_columns(&mut carried);
        }
        for b in &self.branches {
            b.visit_columns_read(&mut carried);
        }
    }

    /// Calls `f` with every expression any program of this object computes:
    /// its filter and output, a JOIN's start filters and keys, and the union
    /// branches' (not their subexpressions: [`ScalarExpr::visit`] walks those).
    pub fn visit_exprs(&self, f: &mut dyn FnMut(&ScalarExpr)) {
        for e in self.own_exprs() {
            f(e);
        }
        for b in &self.branches {
            b.visit_exprs(f);
        }
    }

    /// The expressions of this program (not its union branches').
    fn own_exprs(&self) -> Vec<&ScalarExpr> {
        let mut exprs: Vec<&ScalarExpr> = self.filter.iter().chain(self.output.exprs()).collect();
        if let Some(p) = &self.pairing {
            exprs.extend(p.start_filter.iter());
            exprs.extend(p.keys.iter().flat_map(|(s, e, _)| [s, e]));
            // A union's further branches filter with their own conditions.
            for b in &p.also {
                exprs.extend(b.filter.iter());
            }
        }
        exprs
    }
}

/// Why this kernel cannot run the branch `k` (a union's), if it cannot:
/// file columns at a mapped address need typed loads.
/// `pages_mapped` needs Linux 6.2's per-CPU file-page counter and x86's fault tracepoints.
fn unsupported_here(k: &KernelPlan, kernel: &dyn crate::host::KernelInfo) -> Option<String> {
    if let Some(why) = pages_mapped_unsupported(k, kernel) {
        return Some(why);
    }
    let mapped = k.events().find(|e| crate::catalog::file_columns::address_field(&e.format).is_some())?;
    (k.reads_files() && !has_rdonly_cast(kernel)).then(|| {
        format!(
            "the file columns at {} name the file mapped at an address (bpf_find_vma + bpf_rdonly_cast, Linux \
             6.2+), and this kernel's BTF has no bpf_rdonly_cast",
            mapped.event_description()
        )
    })
}

/// Why `k` reads `pages_mapped` and this kernel cannot count it, if so.
fn pages_mapped_unsupported(k: &KernelPlan, kernel: &dyn crate::host::KernelInfo) -> Option<String> {
    if !k.reads_pages_mapped() {
        return None;
    }
    if k.finishes_faults() {
        let why = crate::catalog::file_columns::finish_problem(kernel)?;
        return Some(format!("a filemap fault's finish cannot be counted on this kernel: {why}"));
    }
    let why = crate::catalog::file_columns::pages_mapped_problem(kernel)?;
    Some(format!("pages_mapped cannot be counted on this kernel: {why}"))
}

/// [`KernelPlan::finish_depth`] on `kernel`.
fn finish_depth(kernel: &dyn crate::host::KernelInfo) -> u8 {
    kernel.btf().is_some_and(|b| b.find("__pte_offset_map_lock", crate::btf::KindTag::Func).is_some()).into()
}

/// True when `kernel`'s BTF declares the `bpf_rdonly_cast` kfunc, which file
/// columns need for typed loads ([`KernelPlan::typed_files`]).
fn has_rdonly_cast(kernel: &dyn crate::host::KernelInfo) -> bool {
    kernel.btf().is_some_and(|b| b.find("bpf_rdonly_cast", crate::btf::KindTag::Func).is_some())
}

/// Sets [`KernelPlan::typed_files`] and [`KernelPlan::finish_depth`] on `k`
/// and its branches from `kernel`'s BTF, when `k` reads file columns: only
/// then do they matter, and looking them up parses the whole BTF (tens of
/// milliseconds and ~8 MB a query without file columns need not pay).
fn set_file_facts(k: &mut KernelPlan, kernel: &dyn crate::host::KernelInfo) {
    if !k.reads_files() {
        return;
    }
    let (typed, depth) = (has_rdonly_cast(kernel), finish_depth(kernel));
    k.typed_files = typed;
    k.finish_depth = depth;
    for b in &mut k.branches {
        b.typed_files = typed;
        b.finish_depth = depth;
    }
}

/// The kernel part of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelPlan {
    /// The event attached to.
    pub event: BoundEvent,
    /// `sched:sched_process_fork`, read to follow children of `-c` commands.
    pub fork_event: TracepointFormat,
    /// `sched:sched_process_exit` when it has `group_dead`: read to forget a
    /// traced process once its last thread exits, so the tracked set does not
    /// fill with dead processes and a reused pid is not traced.
    pub exit_event: Option<TracepointFormat>,
    /// WHERE, evaluated first.
    pub filter: Option<ScalarExpr>,
    /// Aggregate or rows.
    pub output: KernelOutput,
    /// Window cutting.
    pub window: KernelWindow,
    /// For a JOIN, the start event and the pairing map.
    pub pairing: Option<Pairing>,
    /// Capacity of the `-c` process set `ebq_pids` ([`PlanOptions::max_tracked`]).
    pub max_tracked: u32,
    /// Per system-call program, which attachment runs and why (EXPLAIN).
    pub attach_notes: Vec<String>,
    /// Union branches this kernel cannot run, left out so the rest answers
    /// (each also an attach note); the CLI says them on stderr at start.
    pub unsupported: Vec<String>,
    /// File columns reach the fd's `struct file` by typed loads (the kernel's
    /// BTF has the `bpf_rdonly_cast` kfunc, 6.2+) rather than a
    /// `bpf_probe_read_kernel` per hop (`codegen::file`). Decided here from
    /// the bound kernel's BTF, so codegen and EXPLAIN never look at the host.
    pub typed_files: bool,
    /// The RCU read-lock levels a filemap fault's finish holds beyond the
    /// fault's start, where it changes the file-page count at `kmem:rss_stat`
    /// (`codegen::mapped_pages::FINISH`): 1 where mapping a page table takes
    /// the RCU read lock (Linux 6.5 on, which has `__pte_offset_map_lock`),
    /// else 0. Fault-around holds one more. Decided from the bound kernel's BTF.
    pub finish_depth: u8,
    /// In a top-level `UNION ALL`, which of the written branches this program
    /// runs (0-based): branches no event can pass are not planned, so the
    /// programs' order alone does not say it.
    pub union_branch: usize,
    /// The written branches left out of a top-level `UNION ALL` (on the first
    /// program), each with its reason, numbered as written (EXPLAIN).
    pub left_out: Vec<String>,
    /// A top-level `UNION ALL`: the programs of its second and later
    /// branches, in the same object as this one (the first branch's). Each has
    /// its own event, filter and expressions, and writes the same group map
    /// or ring buffer through the same layouts; their own `branches` are empty.
    pub branches: Vec<KernelPlan>,
}

/// Where a user-visible column's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserSource {
    /// A field of the aggregate key.
    Key(usize),
    /// The group's event count.
    Count,
    /// How many hidden groups (distinct values of the COUNT(DISTINCT) argument) it has.
    DistinctCount,
    /// A value slot (index into the value layout's fields).
    Slot(usize),
    /// Sum slot / count.
    Avg(usize),
    /// A field of the row record.
    Row(usize),
    /// A histogram slot (index into the value layout's fields).
    Hist(usize),
    /// A HyperLogLog slot (index into the value layout's fields): its estimate.
    Hll(usize),
    /// A quantile from sketch `sketch` (index into `sketches`), q in millionths.
    Quantile {
        /// Which sketch.
        sketch: usize,
        /// q × 10^6.
        ppm: u32,
    },
    /// One column of an APPROX_TOP_K row, from the sketch in value field
    /// `field`; each group expands into `k` rows (`exec::group_rows`).
    TopK {
        /// Index into the value layout's fields.
        field: usize,
        /// Which column.
        part: crate::bind::TopKPart,
    },
}

/// An output column and how user space computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct UserColumn {
    /// Output name.
    pub name: String,
    /// Output type.
    pub ty: DataType,
    /// The value, over the plan's inputs.
    pub expr: PostExpr,
}

/// How the outputs of a plan's programs become the user plan's input rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Combine {
    /// One program: its per-CPU groups merged per window, or its rows
    /// streamed as they come.
    Single,
    /// Two row programs (`FROM a, b … WINDOW(time, …)`): each window's rows
    /// of the first stream hash-joined with the second's.
    WindowJoin(Box<WindowJoin>),
    // A top-level UNION ALL needs no variant: its branches are programs of
    // one object writing one group map or ring (`KernelPlan::branches`), so
    // it combines as `Single`.
}

/// The user-space part of a query: per group (or record) fetch `inputs`,
/// keep it if `having` holds, compute `columns`, then sort and limit.
#[derive(Debug, Clone, PartialEq)]
pub struct UserPlan {
    /// How the programs' outputs combine into the rows this plan works on.
    pub combine: Combine,
    /// Values read per group or record (`PostExpr::Input(i)` is `inputs[i]`).
    pub inputs: Vec<UserSource>,
    /// A name for each input, for EXPLAIN.
    pub input_names: Vec<String>,
    /// HAVING, over inputs.
    pub having: Option<PostExpr>,
    /// Output columns in order.
    pub columns: Vec<UserColumn>,
    /// ORDER BY, over inputs and outputs.
    pub order_by: Vec<SortKey>,
    /// LIMIT.
    pub limit: Option<u64>,
    /// Kernel windows (panes) per output window: 1 for tumbling windows,
    /// size / step for sliding ones.
    pub window_panes: u64,
    /// What exporters read beside each row's columns (`Output::extras`), in
    /// this order: the exact sums the kernel keeps beside histogram buckets
    /// and the full quantile sketches. Empty for row queries and stream joins.
    pub distributions: Vec<Distribution>,
}

/// One exact distribution an aggregate row carries for exporters besides its
/// columns: a lossless histogram needs its sum, and a fleet-wide quantile
/// needs the sketch's buckets, not one host's quantile numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// HIST/LHIST value field `hist`: one extra value, the exact sum of its
    /// argument (value field `sum`, a hidden or selected `SUM` slot).
    HistSum {
        /// The histogram's value field.
        hist: usize,
        /// The `SUM` slot of the same argument.
        sum: usize,
    },
    /// Quantile sketch `sketch`: two extra values, its buckets
    /// (`Value::Hist` of the buckets' integer ranges, see `hist::sketch_bounds`)
    /// and the exact sum of its argument (value field `sum`).
    Sketch {
        /// The sketch's number.
        sketch: usize,
        /// The `SUM` slot of the same argument.
        sum: usize,
    },
}

impl Distribution {
    /// Values this distribution adds to a row's extras.
    pub fn width(&self) -> usize {
        match self {
            Distribution::HistSum { .. } => 1,
            Distribution::Sketch { .. } => 2,
        }
    }
}

/// A query ready for code generation: its BPF programs (one object each,
/// with its own maps and attach points) and the user-space part that
/// combines their outputs ([`UserPlan::combine`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PhysicalPlan {
    /// The query text.
    pub sql: String,
    /// Kernel part: one entry per BPF object (two for a join of two streams).
    pub programs: Vec<KernelPlan>,
    /// User part.
    pub user: UserPlan,
}

impl PhysicalPlan {
    /// The join of two streams, when the plan is one.
    pub fn window_join(&self) -> Option<&WindowJoin> {
        match &self.user.combine {
            Combine::WindowJoin(j) => Some(j),
            Combine::Single => None,
        }
    }
}

/// Builds the physical plan.
pub fn plan(sql: &str, logical: &LogicalPlan, catalog: &Catalog, options: &PlanOptions) -> Result<PhysicalPlan> {
    if let Some(join) = &logical.stream_join {
        if options.row_fold.is_some() {
            let why = "a kernel fold takes one kernel query's rows: a join of two streams pairs its rows in user space";
            return Err(Error::query(Stage::Plan, why.to_string(), None));
        }
        return stream_join::plan_stream_join(sql, logical, join, catalog, options);
    }
    // Sliding windows are assembled in user space from tumbling panes of one step.
    let (window, window_panes) = match &logical.window {
        None => (KernelWindow::None, 1),
        Some(w) => match w.kind {
            WindowKind::Time => (KernelWindow::Time { size_ms: w.step }, window_panes(w)?),
            WindowKind::Count => (KernelWindow::Count { n: w.step }, window_panes(w)?),
        },
    };
    let (output, mut columns) = match &logical.body {
        QueryBody::Rows { columns } => rows_plan(logical, columns, options)?,
        QueryBody::Aggregate { keys, aggs, columns, having } => {
            let body = AggregateBody { keys, aggs, columns, having: having.as_ref() };
            aggregate_plan(logical, &body, window != KernelWindow::None, options)
                .map_err(|e| with_span(e, logical.select_span))?
        }
    };
    columns.window_panes = window_panes;
    let mut output = output;
    if let KernelOutput::Aggregate { key_fields, single_slot, .. } = &mut output {
        *single_slot = single_slot::is_single_slot(key_fields.len(), window);
    }
    let pairing = match &logical.join {
        Some(join) => Some(Pairing::new(join, &logical.event, logical.filter.iter().chain(output.exprs()), options)?),
        None => None,
    };
    check_stack(logical, &output, pairing.as_ref())?;
    let fork_event = catalog.tracepoint("sched", "sched_process_fork")?;
    let exit_event = catalog.tracepoint("sched", "sched_process_exit").ok().filter(|f| f.field("group_dead").is_some());
    if options.max_tracked == 0 {
        return Err(Error::query(Stage::Plan, "--max-tracked must be at least 1", None));
    }
    let mut physical = PhysicalPlan {
        sql: sql.to_string(),
        programs: vec![KernelPlan {
            event: logical.event.clone(),
            fork_event,
            exit_event,
            filter: logical.filter.clone(),
            output,
            window,
            pairing,
            max_tracked: options.max_tracked,
            attach_notes: vec![],
            unsupported: vec![],
            // Kernel facts file columns need: set below, once the program is whole.
            typed_files: false,
            finish_depth: 0,
            union_branch: 0,
            left_out: vec![],
            branches: vec![],
        }],
        user: columns,
    };
    if logical.union.is_empty() {
        syscall_attach::choose(&mut physical.programs[0], catalog, options, false);
        let shadowed = record_shadow::notes(&physical.programs[0]);
        physical.programs[0].attach_notes.extend(shadowed);
    } else {
        physical.programs[0] = union_programs(&physical.programs[0], logical, catalog, options)?;
    }
    set_file_facts(&mut physical.programs[0], catalog.kernel());
    check_program(&physical.programs[0], logical, catalog)?;
    if options.late_names && physical.programs.len() == 1 {
        late_names::apply(&mut physical.programs[0]);
    }
    Ok(physical)
}

/// A row query's kernel output (a record per event into the ring buffer,
/// or into a kernel fold) and the user plan that decodes it: the outputs are
/// the record's fields as they are.
fn rows_plan(
    logical: &LogicalPlan,
    columns: &[OutputColumn<ScalarExpr>],
    options: &PlanOptions,
) -> Result<(KernelOutput, UserPlan)> {
    if !options.ringbuf_bytes.is_power_of_two() || options.ringbuf_bytes < 4096 {
        return Err(Error::query(
            Stage::Plan,
            format!("ring buffer size {} must be a power of two of at least 4096", options.ringbuf_bytes),
            None,
        ));
    }
    if options.row_fold.is_some()
        && (options.stage_limit.is_some() || !logical.order_by.is_empty() || logical.limit.is_some())
    {
        return Err(Error::query(
            Stage::Plan,
            "a kernel fold takes every row in the kernel: no ORDER BY, LIMIT or stage limit".to_string(),
            None,
        ));
    }
    let named: Vec<(String, DataType)> =
        columns.iter().enumerate().map(|(i, c)| (c_name(&c.name, i), storage_type(c.ty))).collect();
    let (mut record, pos) = StructLayout::new(&named);
    let fields: Vec<(ScalarExpr, usize)> =
        columns.iter().enumerate().map(|(i, c)| (c.source.clone(), pos[i])).collect();
    record.mark_user_strings(&fields);
    let inputs = pos.iter().map(|&p| UserSource::Row(p)).collect();
    let outputs = columns
        .iter()
        .enumerate()
        .map(|(i, c)| UserColumn { name: c.name.clone(), ty: c.ty, expr: PostExpr::Ref(Input { index: i, ty: c.ty }) })
        .collect();
    // A row query's ORDER BY names its outputs, which read no key or aggregate.
    let order_by = logical
        .order_by
        .iter()
        .map(|k| SortKey { expr: k.expr.clone().map_refs(&|r| r.input(0)), desc: k.desc })
        .collect();
    let input_names = columns.iter().map(|c| c.name.clone()).collect();
    let user = UserPlan {
        combine: Combine::Single,
        inputs,
        input_names,
        having: None,
        columns: outputs,
        order_by,
        limit: logical.limit,
        window_panes: 1,
        distributions: vec![],
    };
    let out = KernelOutput::Rows {
        record,
        fields,
        ringbuf_bytes: options.ringbuf_bytes,
        // At most a quarter of the ring: a threshold the ring cannot hold never wakes the reader.
        wakeup_bytes: options.wakeup_bytes.clamp(1, options.ringbuf_bytes / 4),
        per_cpu_rings: options.per_cpu_rings,
        stage_limit: options.stage_limit,
        fold: options.row_fold.clone(),
    };
    Ok((out, user))
}

/// What a whole program (its branches included) cannot do on this kernel
/// or in one object: stacks at an expanding event, a mapped file without
/// bpf_rdonly_cast, pages_mapped without its tracepoints, file columns
/// beside a USDT probe.
fn check_program(k: &KernelPlan, logical: &LogicalPlan, catalog: &Catalog) -> Result<()> {
    let events: Vec<&BoundEvent> = k.events().collect();
    let usdt = events.iter().find(|e| matches!(e.source, EventSource::Usdt { .. })).cloned();
    if let Some(x) = events.iter().find(|e| matches!(e.source, EventSource::Expand { .. })).filter(|_| k.reads_stacks())
    {
        // The row code runs on ebq's copy of an element, not on the tracepoint's context,
        // which the stack helpers need.
        return Err(Error::query(
            Stage::Plan,
            format!(
                "{}: kstack and ustack are not available at an expanding event (its row code runs once per \
                 element, without the tracepoint's context the stack helpers read)",
                x.name
            ),
            logical.select_span,
        ));
    }
    let mapped = events.iter().map(|e| &e.format).find(|f| crate::catalog::file_columns::address_field(f).is_some());
    if let Some(format) = mapped.filter(|_| !k.typed_files && k.reads_files()) {
        return Err(Error::query(
            Stage::Plan,
            format!(
                "file columns at {}:{} name the file mapped at an address, found with bpf_find_vma and read through \
                 bpf_rdonly_cast; this kernel's BTF has no bpf_rdonly_cast (Linux 6.2+)",
                format.category, format.name
            ),
            logical.select_span,
        ));
    }
    if let Some(why) = pages_mapped_unsupported(k, catalog.kernel()) {
        return Err(Error::query(Stage::Plan, why, logical.select_span));
    }
    if let Some(probe) = usdt.filter(|_| k.reads_files()) {
        // File columns compile against the kernel's own types (vmlinux.h), whose struct
        // pt_regs names registers differently from a USDT operand's (uprobes and kprobes
        // read theirs under either name: codegen::probe's EBQ_REG).
        return Err(Error::query(
            Stage::Plan,
            format!(
                "file columns cannot be read in the same query as {}: split it into a query over the \
                 system call and one over the probe",
                probe.event_description()
            ),
            logical.select_span,
        ));
    }
    Ok(())
}

/// The programs of a top-level union: `base` (planned over the union's
/// columns) once per branch, each reading its own expressions, the first
/// holding the others. Each branch goes through the system-call attachment
/// decision and the stack budget on its own; a branch that pairs two events
/// gets its own pairing (map, start program), tagged with its index.
/// Each union branch's WHERE (its own and the query's over its columns), and
/// the branches that some event can pass. A branch no event can pass
/// (`path != 'mmap'` over a view's mmap branch, whose path is a constant)
/// attaches nothing; when every branch is so, the first stands, so a plan has
/// a program. A JOIN branch's conditions on its start columns are its join's.
fn possible_branches(base: &KernelPlan, logical: &LogicalPlan) -> (Vec<Option<ScalarExpr>>, Vec<usize>) {
    let filters: Vec<Option<ScalarExpr>> = logical
        .union
        .iter()
        .map(|u| {
            crate::bind::and_all(u.filter.iter().cloned().chain(base.filter.iter().map(|f| u.rewrite(f))).collect())
        })
        .collect();
    // The branch's WHERE and its JOIN's start filter together: the view's IN list
    // of calls and the query's may share no call.
    let possible = |i: &usize| {
        let start = logical.union[*i].join.as_ref().and_then(|j| j.start_filter.clone());
        let both = crate::bind::and_all(filters[*i].iter().cloned().chain(start).collect());
        both.is_none_or(|f| f.const_truth() != Some(false))
    };
    let mut planned: Vec<usize> = (0..filters.len()).filter(possible).collect();
    if planned.is_empty() {
        planned.push(0);
    }
    (filters, planned)
}

fn union_programs(
    base: &KernelPlan,
    logical: &LogicalPlan,
    catalog: &Catalog,
    options: &PlanOptions,
) -> Result<KernelPlan> {
    let mut programs: Vec<KernelPlan> = vec![];
    let (mut left_out, mut unsupported) = (vec![], vec![]);
    let (filters, planned) = possible_branches(base, logical);
    for (i, u) in logical.union.iter().enumerate() {
        if !planned.contains(&i) {
            left_out.push(format!(
                "branch {} ({}): its WHERE is false for every event",
                i + 1,
                u.event.event_description()
            ));
            continue;
        }
        let last = Some(&i) == planned.last();
        let filter = filters[i].clone().and_then(ScalarExpr::without_constants);
        let mut k = KernelPlan {
            event: u.event.clone(),
            union_branch: i,
            filter,
            output: base.output.clone().map_exprs(&|e| u.rewrite(e).without_constant_cases()),
            ..base.clone()
        };
        if let Some(join) = &u.join {
            // The query's conditions on start columns alone are checked before a pair opens.
            let (start_only, rest) = crate::bind::split_start_only(k.filter.take());
            k.filter = rest;
            let start_filter = crate::bind::and_all(join.start_filter.iter().cloned().chain(start_only).collect());
            let join = &crate::bind::BoundJoin {
                start_filter: start_filter.and_then(ScalarExpr::without_constants),
                ..join.clone()
            };
            let mut p = Pairing::new(join, &k.event, k.filter.iter().chain(k.output.exprs()), options)?;
            p.branch = programs.len();
            k.pairing = Some(p);
        }
        if let Some(why) = unsupported_here(&k, catalog.kernel()).filter(|_| !(last && programs.is_empty())) {
            // A view's branch this kernel cannot run (io.ops' msync before Linux 6.2): the
            // other branches still answer, and the user is told which part is missing.
            let branch = format!("branch {} ({})", i + 1, u.event.event_description());
            left_out.push(format!("{branch}: {why}"));
            unsupported.push(format!("{branch} left out: {why}"));
            continue;
        }
        let checked = LogicalPlan { filter: k.filter.clone(), join: u.join.clone(), ..logical.clone() };
        check_stack(&checked, &k.output, k.pairing.as_ref())?;
        programs.push(k);
    }
    if programs.len() > crate::bind::MAX_UNION_BRANCHES {
        let most = crate::bind::MAX_UNION_BRANCHES;
        let why =
            format!("a union runs at most {most} branches; {} remain after those its WHERE rules out", programs.len());
        return Err(Error::query(Stage::Plan, why, None));
    }
    let every_call = programs.iter().any(syscall_attach::on_every_call);
    for k in &mut programs {
        let others = every_call && !syscall_attach::on_every_call(k);
        syscall_attach::choose(k, catalog, options, others);
    }
    mark_union_strings(&mut programs);
    let mut first = programs.remove(0);
    first.left_out = left_out;
    first.unsupported = unsupported;
    first.branches = programs;
    Ok(first)
}

/// A union's string field is NULL-marked when any branch reads it through a
/// pointer ([`may_be_unreadable`]): every branch writes the same record or
/// key layout and the decoder reads the first's, so each carries the marks
/// of all; a branch whose string there is never NULL clears the mark of an
/// empty one in a ring record (`codegen::row_emit`).
fn mark_union_strings(programs: &mut [KernelPlan]) {
    let mut marked = vec![];
    for k in programs.iter_mut() {
        let (_, fields) = k.output.layout_and_fields();
        marked.extend(fields.iter().filter(|(e, _)| may_be_unreadable(e)).map(|(_, i)| *i));
    }
    for k in programs.iter_mut() {
        let (layout, _) = k.output.layout_and_fields();
        for (i, f) in layout.fields.iter_mut().enumerate() {
            f.null_marked = marked.contains(&i);
        }
    }
}

/// Steps per window (1 for tumbling windows); a window must be a whole
/// number of steps, at most 1000.
fn window_panes(w: &Window) -> Result<u64> {
    let Window { size, step, span, .. } = *w;
    if step > size || size % step != 0 {
        return Err(Error::query(
            Stage::Plan,
            format!("a sliding window's size ({size}) must be a multiple of its step ({step})"),
            span,
        ));
    }
    if size / step > 1000 {
        return Err(Error::query(
            Stage::Plan,
            format!("a window of {} steps is too many panes (the limit is 1000)", size / step),
            span,
        ));
    }
    Ok(size / step)
}

/// The parts of an aggregate [`QueryBody`].
struct AggregateBody<'a> {
    keys: &'a [ScalarExpr],
    aggs: &'a [AggCall],
    columns: &'a [OutputColumn<GroupExpr>],
    having: Option<&'a GroupExpr>,
}

/// How a user plan input reads an aggregate: directly, or from value slot
/// `j` (laid out later) through the constructor.
enum AggInput {
    Direct(UserSource),
    Slot(usize, fn(usize) -> UserSource),
}

/// The aggregate `body` of `logical`: its key and value structs
/// and the user plan over them. Only a windowed query's key has a `window`
/// field (and a keyless one, whose key must not be empty): a smaller key is
/// cheaper to hash on every event.
fn aggregate_plan(
    logical: &LogicalPlan,
    body: &AggregateBody,
    windowed: bool,
    options: &PlanOptions,
) -> Result<(KernelOutput, UserPlan)> {
    let AggregateBody { keys, aggs, .. } = *body;
    let (kernel_keys, hidden_keys) = kernel_keys(keys, aggs)?;
    let window_field = windowed || kernel_keys.is_empty();
    let mut key_named = if window_field { vec![("window".to_string(), DataType::U64)] } else { vec![] };
    let first_key = key_named.len();
    key_named.extend(kernel_keys.iter().enumerate().map(|(i, k)| (c_name(&k.to_string(), i), storage_type(k.ty()))));
    let (key, key_pos) = StructLayout::new(&key_named);
    let ValueSlots { mut slot_defs, agg_inputs, sketches } = value_slots(aggs, options);
    let dists = distribution_sums(&mut slot_defs, &sketches);
    let (value, value_pos) = StructLayout::new(&value_fields(&slot_defs));
    if value.size > MAX_VALUE_BYTES {
        return Err(Error::query(
            Stage::Plan,
            format!(
                "the histograms of this query need {} bytes per group; the kernel's limit is {MAX_VALUE_BYTES} (use fewer LHIST buckets)",
                value.size
            ),
            None,
        ));
    }
    let slots = slot_defs
        .into_iter()
        .enumerate()
        .map(|(j, (func, arg, weight))| ValueSlot { func, arg, weight, field: value_pos[j + 1] })
        .collect::<Vec<_>>();
    // Inputs: every key, then every aggregate.
    let mut inputs: Vec<UserSource> = (0..keys.len()).map(|i| UserSource::Key(key_pos[first_key + i])).collect();
    inputs.extend(agg_inputs.into_iter().map(|a| match a {
        AggInput::Direct(source) => source,
        AggInput::Slot(j, input) => input(value_pos[j + 1]),
    }));
    let user = aggregate_user_plan(logical, body, inputs, distributions(&dists, &value_pos));
    let key_fields: Vec<(ScalarExpr, usize)> =
        kernel_keys.iter().enumerate().map(|(i, k)| (k.clone(), key_pos[first_key + i])).collect();
    let mut key = key;
    key.mark_user_strings(&key_fields);
    if options.max_groups == 0 {
        return Err(Error::query(Stage::Plan, "--max-groups must be at least 1", None));
    }
    if options.sketch_buckets == 0 && !sketches.is_empty() {
        return Err(Error::query(Stage::Plan, "the quantile sketch needs at least 1 bucket", None));
    }
    let (value_on_stack, preallocated) = (value_fits_stack(&value), group_map_preallocated(&value, options.max_groups));
    Ok((
        KernelOutput::Aggregate {
            key,
            key_fields,
            value,
            slots,
            max_groups: options.max_groups,
            hidden_keys,
            sketches,
            sketch_buckets: options.sketch_buckets,
            single_slot: false, // decided in `plan`, which knows the window
            value_on_stack,
            preallocated,
            late_names: None, // decided in `plan`, once the branches are known
        },
        user,
    ))
}

/// The user plan over an aggregate's `inputs` (every key, then every
/// aggregate): HAVING, the columns and ORDER BY with their references
/// turned into input indexes.
fn aggregate_user_plan(
    logical: &LogicalPlan,
    body: &AggregateBody,
    inputs: Vec<UserSource>,
    distributions: Vec<Distribution>,
) -> UserPlan {
    let AggregateBody { keys, aggs, columns, having } = *body;
    let nkeys = keys.len();
    let to_inputs = |e: GroupExpr| e.map_refs(&|r| r.input(nkeys));
    let mut input_names: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    input_names.extend(aggs.iter().map(|a| a.to_string()));
    UserPlan {
        combine: Combine::Single,
        inputs,
        input_names,
        having: having.cloned().map(to_inputs),
        columns: columns
            .iter()
            .map(|c| UserColumn { name: c.name.clone(), ty: c.ty, expr: to_inputs(c.source.clone()) })
            .collect(),
        order_by: logical.order_by.iter().map(|k| SortKey { expr: to_inputs(k.expr.clone()), desc: k.desc }).collect(),
        limit: logical.limit,
        window_panes: 1,
        distributions,
    }
}

/// The kernel's group key: the GROUP BY keys, and COUNT(DISTINCT x)'s `x`
/// as one hidden key more (user space counts its values per group) unless
/// it is a key already; with how many hidden keys (0 or 1). Every
/// COUNT(DISTINCT) of a query must count the same expression.
fn kernel_keys(keys: &[ScalarExpr], aggs: &[AggCall]) -> Result<(Vec<ScalarExpr>, usize)> {
    let distinct: Vec<&ScalarExpr> =
        aggs.iter().filter(|a| a.func == AggFunc::CountDistinct).filter_map(|a| a.arg.as_ref()).collect();
    if distinct.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::query(Stage::Plan, "all COUNT(DISTINCT …) of a query must count the same expression", None));
    }
    let mut kernel_keys: Vec<ScalarExpr> = keys.to_vec();
    let hidden_keys = match distinct.first() {
        Some(x) if !keys.contains(x) => {
            kernel_keys.push((*x).clone());
            1
        }
        _ => 0,
    };
    Ok((kernel_keys, hidden_keys))
}

/// The aggregates as kernel value slots ([`value_slots`]).
struct ValueSlots {
    /// One per distinct (func, arg, weight); AVG shares SUM's slot.
    slot_defs: Vec<SlotDef>,
    /// How each aggregate (in SELECT order) is read back.
    agg_inputs: Vec<AggInput>,
    /// One quantile sketch per distinct argument, shared by every q.
    sketches: Vec<ScalarExpr>,
}

/// A value slot before its layout: (function, argument, top-k weight).
type SlotDef = (AggFunc, ScalarExpr, Option<ScalarExpr>);

/// The value struct's slots after `count`: one 64-bit slot (or bucket array)
/// per distinct (func, arg, weight), so two aggregates of the same thing share it;
/// COUNT and COUNT(DISTINCT) read no slot, quantiles read a sketch.
fn value_slots(aggs: &[AggCall], options: &PlanOptions) -> ValueSlots {
    let mut slot_defs: Vec<SlotDef> = vec![];
    let mut agg_inputs = vec![];
    let mut sketches: Vec<ScalarExpr> = vec![];
    for a in aggs {
        let (func, input): (AggFunc, fn(usize) -> UserSource) = match a.func {
            AggFunc::Quantile { ppm } => {
                let arg = a.arg.clone().expect("QUANTILE has an argument");
                let sketch = sketches.iter().position(|x| *x == arg).unwrap_or_else(|| {
                    sketches.push(arg);
                    sketches.len() - 1
                });
                agg_inputs.push(AggInput::Direct(UserSource::Quantile { sketch, ppm }));
                continue;
            }
            AggFunc::Count => {
                agg_inputs.push(AggInput::Direct(UserSource::Count));
                continue;
            }
            AggFunc::CountDistinct => {
                agg_inputs.push(AggInput::Direct(UserSource::DistinctCount));
                continue;
            }
            AggFunc::Avg => (AggFunc::Sum, UserSource::Avg),
            // HIST buckets as the plan's options say (exporters want Ceil).
            AggFunc::Hist(_) => (AggFunc::Hist(options.hist_buckets), UserSource::Hist),
            f @ AggFunc::Lhist(_) => (f, UserSource::Hist),
            f @ AggFunc::ApproxCountDistinct => (f, UserSource::Hll),
            // One sketch per (k, key, weight) serves its three columns.
            AggFunc::ApproxTopK { k, part } => (AggFunc::ApproxTopK { k, part: TopKPart::Key }, top_k_input(part)),
            f => (f, UserSource::Slot),
        };
        let arg = a.arg.clone().expect("non-COUNT aggregates have an argument");
        let j = slot_defs.iter().position(|(f, x, w)| *f == func && *x == arg && *w == a.weight).unwrap_or_else(|| {
            slot_defs.push((func, arg, a.weight.clone()));
            slot_defs.len() - 1
        });
        agg_inputs.push(AggInput::Slot(j, input));
    }
    ValueSlots { slot_defs, agg_inputs, sketches }
}

/// The user input reading `part` of a top-k sketch's rows.
fn top_k_input(part: TopKPart) -> fn(usize) -> UserSource {
    match part {
        TopKPart::Key => |field| UserSource::TopK { field, part: TopKPart::Key },
        TopKPart::Estimate => |field| UserSource::TopK { field, part: TopKPart::Estimate },
        TopKPart::ErrorBound => |field| UserSource::TopK { field, part: TopKPart::ErrorBound },
    }
}

/// Every histogram's and sketch's argument is also summed in the kernel
/// (sharing a selected SUM of it), so exporters have the exact `_sum`: adds
/// the SUM slots that are missing and gives (histogram slot or None for a
/// sketch, its sum slot), histograms first, then sketches in order.
fn distribution_sums(slot_defs: &mut Vec<SlotDef>, sketches: &[ScalarExpr]) -> Vec<(Option<usize>, usize)> {
    let sum_slot = |slot_defs: &mut Vec<SlotDef>, arg: &ScalarExpr| {
        slot_defs.iter().position(|(f, x, _)| *f == AggFunc::Sum && x == arg).unwrap_or_else(|| {
            slot_defs.push((AggFunc::Sum, arg.clone(), None));
            slot_defs.len() - 1
        })
    };
    let mut dists: Vec<(Option<usize>, usize)> = vec![];
    for (j, (f, arg, _)) in slot_defs.clone().iter().enumerate() {
        if f.is_histogram() {
            dists.push((Some(j), sum_slot(slot_defs, arg)));
        }
    }
    for arg in sketches {
        dists.push((None, sum_slot(slot_defs, arg)));
    }
    dists
}

/// The value struct's fields: `count`, then a slot per definition named
/// `<func>_<j>`, typed by its aggregate (buckets, HLL registers, or 64 bits
/// signed as its argument).
fn value_fields(slot_defs: &[SlotDef]) -> Vec<(String, DataType)> {
    let mut value_named = vec![("count".to_string(), DataType::U64)];
    value_named.extend(slot_defs.iter().enumerate().map(|(j, (f, a, _))| {
        let ty = match f {
            AggFunc::Hist(log2) => DataType::Buckets { len: log2.slots() as u16 },
            AggFunc::Lhist(l) => DataType::Buckets { len: l.slots() as u16 },
            AggFunc::ApproxCountDistinct => DataType::Registers { len: crate::hll::REGISTERS as u16 },
            AggFunc::ApproxTopK { k, .. } => DataType::Buckets { len: crate::topk::words(*k) as u16 },
            _ if a.ty().is_signed() => DataType::I64,
            _ => DataType::U64,
        };
        (format!("{}_{j}", f.to_string().to_ascii_lowercase()), ty)
    }));
    value_named
}

/// [`distribution_sums`]'s pairs at their value fields' offsets; sketches
/// are numbered in order.
fn distributions(dists: &[(Option<usize>, usize)], value_pos: &[usize]) -> Vec<Distribution> {
    let mut sketch = 0;
    dists
        .iter()
        .map(|&(hist, sum)| match hist {
            Some(h) => Distribution::HistSum { hist: value_pos[h + 1], sum: value_pos[sum + 1] },
            None => {
                sketch += 1;
                Distribution::Sketch { sketch: sketch - 1, sum: value_pos[sum + 1] }
            }
        })
        .collect()
}

/// Gives a plan error without a position the SELECT list's.
fn with_span(e: Error, span: Option<crate::error::Span>) -> Error {
    match e {
        Error::Query(mut q) if q.span.is_none() => {
            q.span = span;
            Error::Query(q)
        }
        other => other,
    }
}

/// How a value is stored in keys and records: booleans as bytes, the rest as is.
fn storage_type(ty: DataType) -> DataType {
    match ty {
        DataType::Bool => DataType::Int { bits: 8, signed: false },
        t => t,
    }
}

/// A C identifier for output column `i` named `name`.
pub fn c_name(name: &str, i: usize) -> String {
    let mut s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    s.truncate(32);
    let s = s.trim_matches('_');
    format!("c{i}_{s}")
}

/// True when a new group's value is zeroed on the BPF stack (`struct
/// ebq_value fresh = {}`); values with histogram counters or HyperLogLog
/// registers are too big and
/// are copied from the all-zero `ebq_zero` map instead.
fn value_fits_stack(value: &StructLayout) -> bool {
    !value.fields.iter().any(|f| matches!(f.ty, DataType::Buckets { .. } | DataType::Registers { .. }))
}

/// Most bytes per CPU the group map may reserve up front (max groups ×
/// value size); bigger maps (wide LHISTs) allocate entries as groups occur.
pub const PREALLOC_BUDGET_BYTES: u64 = 32 << 20;

/// True when `ebq_groups` is preallocated. Preallocation is the default:
/// an entry allocated inside a tracing program comes from a per-CPU cache
/// refilled asynchronously, so a burst of new groups with big values can
/// find it empty and lose the event (counted in `dropped`) while the map is
/// far from full — measured: 600–1000 of 12,000 new HIST groups with
/// `BPF_F_NO_PREALLOC`. Only maps over [`PREALLOC_BUDGET_BYTES`] take that risk.
fn group_map_preallocated(value: &StructLayout, max_groups: u32) -> bool {
    u64::from(max_groups) * u64::from(value.size) <= PREALLOC_BUDGET_BYTES
}

/// Rejects plans whose stack needs exceed [`STACK_BUDGET`]. The end program
/// of a JOIN holds the pairing key too (its carried columns go to a per-CPU
/// scratch value).
fn check_stack(logical: &LogicalPlan, output: &KernelOutput, pairing: Option<&Pairing>) -> Result<()> {
    let mut strings: Vec<(String, u32)> = vec![];
    // Carried (JOIN start) strings live in a scratch value, but copying them
    // into keys costs clang stack all the same: they count too.
    let mut note = |c: &ColumnSource| {
        let cap = if in_string_scratch(c) { 0 } else { c.string_cap().map_or(0, u32::from) };
        if cap > 0 && !strings.iter().any(|(n, _)| n == c.name()) {
            strings.push((c.name().to_string(), cap));
        }
    };
    // Strings read straight into their output slot (record or key field) take no stack of their own.
    let in_slot = slot_string_reads(output, logical.filter.as_ref(), pairing);
    let on_stack = output.exprs().into_iter().enumerate().filter(|(i, _)| !in_slot.contains(i)).map(|(_, e)| e);
    for e in logical.filter.iter().chain(on_stack) {
        e.visit_columns(&mut note);
    }
    let mut fixed = match output {
        KernelOutput::Aggregate { key, value, sketches, value_on_stack, .. } => {
            // A value with histogram counters starts from a zeroed map entry, not the stack;
            // a sketch update copies the key into the sketch key (+ agg, bucket) and a count.
            let value_on_stack = if *value_on_stack { value.size } else { 0 };
            let sketch = if sketches.is_empty() { 0 } else { key.size + 16 };
            key.size + value_on_stack + sketch
        }
        KernelOutput::Rows { .. } => 0,
    };
    if let Some(p) = pairing {
        fixed += p.key.size; // the carried columns are copied to a per-CPU scratch value
    }
    let total = fixed + strings.iter().map(|(_, c)| c).sum::<u32>();
    if total > STACK_BUDGET {
        let detail: Vec<String> = strings.iter().map(|(n, c)| format!("{n}: {c} B")).collect();
        let what = if pairing.is_some() { "key + value + pairing key" } else { "key + value" };
        return Err(Error::query(
            Stage::Plan,
            format!(
                "this query needs {total} bytes of BPF stack ({what} {fixed} B, strings [{}]); the budget is {STACK_BUDGET} of the kernel's 512",
                detail.join(", ")
            ),
            logical.select_span,
        ));
    }
    if let Some(p) = pairing {
        // The start program: its key and the strings it reads (the pair it fills is per-CPU scratch).
        let mut start_strings = 0;
        for (c, _, _) in &p.carried {
            let c = c.read_at_start();
            if !in_string_scratch(c) {
                start_strings += c.string_cap().map_or(0, u32::from);
            }
        }
        let start_total = p.key.size + start_strings;
        if start_total > STACK_BUDGET {
            return Err(Error::query(
                Stage::Plan,
                format!(
                    "the JOIN's start event needs {start_total} bytes of BPF stack to carry its columns; the budget is {STACK_BUDGET}"
                ),
                logical.join.as_ref().map(|j| j.span),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod arch_tests;
#[cfg(test)]
mod tests;
