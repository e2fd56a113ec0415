//! A kernel fold: a row query whose rows are handed, in the kernel, to a C
//! function its caller supplies, instead of to a ring buffer.
//!
//! ```text
//! rows:  event ─▶ WHERE ─▶ build struct ebq_row in the ring ─▶ submit ─▶ user space decodes every row
//! fold:  event ─▶ WHERE ─▶ build struct ebq_row in a per-CPU slot ─▶ ebq_fold(r) ─▶ the fold's own maps
//! ```
//!
//! Why: some answers are a state machine over every row (Darshan's
//! sequential-access counters, which compare each access with the previous
//! one of its file) and no GROUP BY expresses them; streaming every row to
//! user space for them costs more than the traced program (`ebq report io`
//! spent 4× its programs' CPU decoding rows). The SQL still does everything
//! it does for rows (scope, WHERE, JOIN pairing, file columns, union
//! branches, accounting); only the last step, where the row goes, is the
//! caller's. This is the library's extension point, not SQL: the caller
//! writes C against the row's columns and reads its maps after the run
//! (`RunningQuery::fold_map`).
//!
//! The contract of [`RowFold::source`]:
//! - it comes after `struct ebq_row` and one `#define EBQ_ROW_<column>
//!   <field>` per output column, so it names fields by the SQL's column
//!   names (`r->EBQ_ROW_ret`);
//! - it defines `static __always_inline int ebq_fold(struct ebq_row *r)`,
//!   returning 0 when the row was taken and non-zero when it could not be
//!   (a full map): such rows are counted `dropped`, and `delivered` is
//!   matched − dropped, as for an aggregate;
//! - the maps it declares and user space reads are listed in
//!   [`RowFold::maps`] (the contract gives them `MapRole::Fold`).

/// The C a row query's rows are folded into, in the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowFold {
    /// What the fold computes (EXPLAIN's `[kernel] Fold` line).
    pub name: String,
    /// The C: maps and `ebq_fold` (see the module's contract).
    pub source: String,
    /// The maps user space reads after the run, by their C names.
    pub maps: Vec<String>,
}

/// The column macro for a record field `c<N>_<column>`: `EBQ_ROW_<column>`.
pub fn column_macro(field: &str) -> String {
    let column = field.strip_prefix('c').and_then(|rest| rest.split_once('_')).map_or(field, |(_, name)| name);
    format!("EBQ_ROW_{column}")
}

#[cfg(test)]
mod tests {
    use super::column_macro;

    #[test]
    fn a_record_field_is_named_by_its_column() {
        assert_eq!(column_macro("c13_ret"), "EBQ_ROW_ret");
        assert_eq!(column_macro("c10_open_file_name"), "EBQ_ROW_open_file_name");
    }
}
