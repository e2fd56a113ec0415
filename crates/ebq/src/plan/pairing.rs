//! The physical side of a JOIN: the pairing map's key and value structs.

use super::{c_name, storage_type, StructLayout};
use crate::bind::{BoundEvent, BoundJoin, ColumnSource, ScalarExpr, StartBranch};
use crate::error::{Error, Result, Stage};
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
}

impl Pairing {
    /// Lays out the pairing for `join`, carrying the start columns that the
    /// end program's `exprs` read.
    pub fn new<'a>(
        join: &BoundJoin,
        exprs: impl IntoIterator<Item = &'a ScalarExpr>,
        max_pending: u32,
    ) -> Result<Pairing> {
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

    /// The stash field holding carried column `c`.
    pub fn field_of(&self, c: &ColumnSource) -> Option<&str> {
        self.carried.iter().find(|(x, _, _)| x == c).map(|(_, _, pos)| self.stash.fields[*pos].name.as_str())
    }
}
