//! The physical side of a JOIN: the pairing map's key and value structs.

use super::{c_name, storage_type, StructLayout};
use crate::bind::{BoundEvent, BoundJoin, BoundMiddle, ColumnSource, ScalarExpr, StartBranch};
use crate::catalog::{FieldKind, SystemColumn};
use crate::error::{Error, Result, Stage};
use crate::parse::EventName;
use crate::types::DataType;

/// The stash field with the start event's `bpf_ktime_get_ns()`: user space
/// evicts pairs older than `--max-pair-age` by it (an end that never comes:
/// `exit_group`, a filtered or lost end event).
pub const OPENED: &str = "opened_ns";

/// Enter→exit pairing in the kernel: the start program stores the carried
/// columns under the pairing key; the end program looks them up, deletes the
/// entry, and goes on as if one event had all columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Pairing {
    /// The event that opens a pair.
    pub start: BoundEvent,
    /// (start, end) event names as qualifiers, for plans.
    pub names: (String, String),
    /// Checked in the start program before a pair opens.
    pub start_filter: Option<ScalarExpr>,
    /// Key struct of `ebq_pending`.
    pub key: StructLayout,
    /// Per key field: the start-side expression, the end-side one, the field index.
    pub keys: Vec<(ScalarExpr, ScalarExpr, usize)>,
    /// Value struct of `ebq_pending`: the carried start columns and [`OPENED`].
    pub stash: StructLayout,
    /// Per carried column: its [`ColumnSource::Start`] source, its type, its field in `stash`.
    pub carried: Vec<(ColumnSource, DataType, usize)>,
    /// Capacity of `ebq_pending`: pairs open at once.
    pub max_pending: u32,
    /// Further start events (a union in FROM), opening pairs in the same map.
    pub also: Vec<StartBranch>,
    /// The branch of a top-level union whose pairing this is (0 otherwise):
    /// each such branch has its own map, structs and start program, named by it.
    pub branch: usize,
    /// The open pairs live in their thread's own storage (a TASK_STORAGE map,
    /// one pair per thread) instead of a HASH by key: see [`per_thread`].
    pub per_thread: bool,
    /// Carried strings from user memory are read at the end event, from the
    /// pointer the start kept ([`Pairing::reads_at_end`]): both events are a
    /// system call's, in the same thread (`tid = tid`), so the pointer is
    /// the caller's still, and the call has faulted its page in by its exit
    /// (at the entry a page not resident yet cannot be read: NULL).
    pub strings_at_end: bool,
    /// A row of one `sys_enter_*` event read by `str_at_exit()`: only these
    /// carried strings are read at the end ([`BoundJoin::str_at_exit`]).
    pub str_at_exit: Option<Vec<ColumnSource>>,
    /// A chained JOIN's middle event: its program adds to the open pair's
    /// accumulators ([`Pairing::middle_field`]) in place.
    pub middle: Option<BoundMiddle>,
}

/// True when `join`'s open pairs can live in task storage, one per thread:
/// every event (the end, each start) is a system call's, run in the calling
/// thread's context, and a thread makes one system call at a time, so under
/// keys that include `tid = tid` a HASH would hold at most one open pair of
/// a thread that can ever close (a second start on the thread supersedes
/// the first, as in the HASH). The whole key is kept with the pair and
/// compared at the end, so every match is the HASH's. No hash, no delete, no
/// copy (8–10 points of fio IOPS, issue 16), and a thread's pair goes with
/// it. (Keys are integers: the binder compares no two string columns.)
pub fn per_thread(join: &BoundJoin, end: &BoundEvent) -> bool {
    let syscall = |e: &BoundEvent| matches!(&e.name, EventName::Tracepoint { category, .. } if category == "syscalls" || category == "raw_syscalls");
    let tid = |e: &ScalarExpr| matches!(e, ScalarExpr::Column { source: ColumnSource::System(SystemColumn::Tid), .. });
    let thread_key = |own: &dyn Fn(&ScalarExpr) -> ScalarExpr| join.keys.iter().any(|(s, e, _)| tid(&own(s)) && tid(e));
    syscall(end)
        && syscall(&join.start)
        && join.also.iter().all(|b| syscall(&b.event))
        && thread_key(&|s| s.clone())
        && join.also.iter().all(|b| thread_key(&|s| s.clone().map_columns(&|c| b.column(c))))
}

impl Pairing {
    /// Lays out the pairing for `join` ending at `end`, carrying the start
    /// columns that the end program's `exprs` read; per thread when
    /// [`per_thread`] allows it and the options ask for it.
    pub fn new<'a>(
        join: &BoundJoin,
        end: &BoundEvent,
        exprs: impl IntoIterator<Item = &'a ScalarExpr>,
        options: &super::PlanOptions,
    ) -> Result<Pairing> {
        let max_pending = options.max_pending;
        if max_pending == 0 {
            return Err(Error::query(Stage::Plan, "--max-pending must be at least 1", Some(join.span)));
        }
        let key_named: Vec<(String, DataType)> =
            join.keys.iter().enumerate().map(|(i, (s, _, ty))| (c_name(&s.to_string(), i), *ty)).collect();
        let (key, key_pos) = StructLayout::new(&key_named);
        let keys = join.keys.iter().zip(key_pos).map(|((s, e, _), pos)| (s.clone(), e.clone(), pos)).collect();
        let mut columns = vec![];
        for e in exprs {
            e.typed_columns(&mut columns);
        }
        columns.retain(|(c, _)| c.is_start());
        let mut stash_named: Vec<(String, DataType)> =
            columns.iter().enumerate().map(|(i, (c, ty))| (c_name(c.name(), i), storage_type(*ty))).collect();
        stash_named.push((OPENED.into(), DataType::U64));
        let (stash, mut stash_pos) = StructLayout::new(&stash_named);
        stash_pos.pop();
        let carried = columns.into_iter().zip(stash_pos).map(|((c, ty), pos)| (c, ty, pos)).collect();
        Ok(Pairing {
            start: join.start.clone(),
            names: (join.start_name.clone(), join.end_name.clone()),
            start_filter: join.start_filter.clone(),
            key,
            keys,
            stash,
            carried,
            max_pending,
            also: join.also.clone(),
            branch: 0,
            // A chain's pairs are found by key from a third program: in a HASH.
            per_thread: options.thread_pairs && per_thread(join, end) && join.middle.is_none(),
            strings_at_end: per_thread(join, end),
            str_at_exit: join.str_at_exit.clone(),
            middle: join.middle.clone(),
        })
    }

    /// Every start event's view of the pairing: the first's is `self`; each
    /// further branch reads its own event, filter and columns into the same
    /// key and stash.
    pub fn starts(&self) -> Vec<Pairing> {
        let mut all = vec![Pairing { also: vec![], ..self.clone() }];
        for b in &self.also {
            let own = |e: &ScalarExpr| e.clone().map_columns(&|c| b.column(c));
            all.push(Pairing {
                start: b.event.clone(),
                start_filter: b.filter.clone(),
                keys: self.keys.iter().map(|(s, e, pos)| (own(s), e.clone(), *pos)).collect(),
                carried: self
                    .carried
                    .iter()
                    .map(|(c, ty, pos)| match c {
                        ColumnSource::Start { name, column } => (
                            ColumnSource::Start { name: name.clone(), column: Box::new(b.column((**column).clone())) },
                            *ty,
                            *pos,
                        ),
                        other => (other.clone(), *ty, *pos),
                    })
                    .collect(),
                also: vec![],
                ..self.clone()
            });
        }
        all
    }

    /// The pairing map's name: `ebq_pending`, or `ebq_pending_B` for branch
    /// `B > 0` of a top-level union (each such branch pairs in its own map).
    pub fn map_name(&self) -> &'static str {
        const NAMES: [&str; crate::bind::MAX_UNION_BRANCHES] = [
            "ebq_pending",
            "ebq_pending_1",
            "ebq_pending_2",
            "ebq_pending_3",
            "ebq_pending_4",
            "ebq_pending_5",
            "ebq_pending_6",
            "ebq_pending_7",
            "ebq_pending_8",
            "ebq_pending_9",
            "ebq_pending_10",
            "ebq_pending_11",
            "ebq_pending_12",
            "ebq_pending_13",
            "ebq_pending_14",
            "ebq_pending_15",
            "ebq_pending_16",
            "ebq_pending_17",
            "ebq_pending_18",
            "ebq_pending_19",
            "ebq_pending_20",
            "ebq_pending_21",
            "ebq_pending_22",
            "ebq_pending_23",
            "ebq_pending_24",
            "ebq_pending_25",
            "ebq_pending_26",
            "ebq_pending_27",
            "ebq_pending_28",
            "ebq_pending_29",
            "ebq_pending_30",
            "ebq_pending_31",
        ];
        NAMES[self.branch]
    }

    /// Every start event: the first, then each further branch of a union.
    pub fn start_events(&self) -> impl Iterator<Item = &BoundEvent> {
        std::iter::once(&self.start).chain(self.also.iter().map(|b| &b.event))
    }

    /// Every start event, to rewrite how it attaches (plan time only).
    pub(super) fn start_events_mut(&mut self) -> impl Iterator<Item = &mut BoundEvent> {
        std::iter::once(&mut self.start).chain(self.also.iter_mut().map(|b| &mut b.event))
    }

    /// The start events, as a message names them (`a UNION ALL b` for a union).
    pub fn start_description(&self) -> String {
        let mut all = vec![self.start.event_description()];
        all.extend(self.also.iter().map(|b| b.event.event_description()));
        all.join(" UNION ALL ")
    }

    /// Is carried column `c` (its start-side source) a user string this
    /// pairing reads at its end event ([`Pairing::strings_at_end`]; with
    /// `str_at_exit()`, only the strings it reads)?
    pub fn reads_at_end(&self, c: &ColumnSource) -> bool {
        self.strings_at_end
            && matches!(c.read_at_start(), ColumnSource::Field { kind: FieldKind::UserStr, .. })
            && self.str_at_exit.as_ref().is_none_or(|only| only.contains(c))
    }

    /// The stash field holding middle accumulator `index` (None when the
    /// query does not read it).
    pub fn middle_field(&self, index: usize) -> Option<&str> {
        self.carried
            .iter()
            .find(|(c, _, _)| matches!(c.read_at_start(), ColumnSource::Middle { index: i, .. } if *i == index))
            .map(|(_, _, pos)| self.stash.fields[*pos].name.as_str())
    }

    /// The stash field holding carried column `c`.
    pub fn field_of(&self, c: &ColumnSource) -> Option<&str> {
        self.carried.iter().find(|(x, _, _)| x == c).map(|(_, _, pos)| self.stash.fields[*pos].name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::plan::{plan, PlanOptions};

    /// Whether each pairing of `sql` is per thread.
    fn per_thread(sql: &str, options: &PlanOptions) -> Vec<bool> {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let p = plan(sql, &l, &cat, options).unwrap();
        p.programs[0].pairings().map(|p| p.per_thread).collect()
    }

    #[test]
    fn system_calls_paired_on_the_thread_keep_their_pairs_per_thread() {
        let auto = PlanOptions::default();
        let yes = [
            "SELECT COUNT(*) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid",
            // More keys: kept with the pair and compared at the end.
            "SELECT COUNT(*) FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_exit x ON e.tid = x.tid AND e.id = x.id",
            // A union of entries, each keyed on its own tid.
            "SELECT COUNT(*) FROM (SELECT tid, time FROM syscalls.sys_enter_read \
             UNION ALL SELECT tid, time FROM syscalls.sys_enter_pread64) s JOIN syscalls.sys_exit_read x ON s.tid = x.tid",
        ];
        for sql in yes {
            assert_eq!(per_thread(sql, &auto), [true], "{sql}");
            assert_eq!(per_thread(sql, &PlanOptions { thread_pairs: false, ..Default::default() }), [false], "{sql}");
        }
        let no = [
            // Not keyed on the thread: a HASH may hold many per thread.
            "SELECT COUNT(*) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.pid = x.pid",
            // Not system calls: their ends run in other contexts, and may nest.
            "SELECT COUNT(*) FROM io_uring.io_uring_submit_req s JOIN io_uring.io_uring_complete c ON s.req = c.req",
        ];
        for sql in no {
            assert_eq!(per_thread(sql, &auto), [false], "{sql}");
        }
    }
}
