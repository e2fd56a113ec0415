//! EXPLAIN's word on a name two sources share: at an event that attaches as
//! `tp_btf` (it reads raw arguments) there is no format record, so a record field
//! named like a system column (`comm` at block_rq_issue) was bound to the system
//! column (see `bind::bind_sides`). The plan says so, per event:
//!
//! ```text
//! [kernel] Via        tracepoint:block:block_rq_issue: comm is the system column (the task's, read by the
//!                     program), not the format record's field: a tp_btf program has no record
//! ```

use super::KernelPlan;
use crate::bind::{BoundEvent, ColumnSource, EventSource, ScalarExpr};
use crate::catalog::SystemColumn;

/// One note per tp_btf event of `k` and system column it reads that its record also names.
pub(super) fn notes(k: &KernelPlan) -> Vec<String> {
    let mut end: Vec<SystemColumn> = vec![];
    let mut start: Vec<SystemColumn> = vec![];
    let mut visit = |c: &ColumnSource| match c {
        ColumnSource::Start { column, .. } => {
            if let ColumnSource::System(s) = **column {
                start.push(s);
            }
        }
        ColumnSource::System(s) => end.push(*s),
        _ => {}
    };
    let mut exprs: Vec<&ScalarExpr> = k.filter.iter().chain(k.output.exprs()).collect();
    if let Some(p) = &k.pairing {
        exprs.extend(p.start_filter.iter());
        exprs.extend(p.keys.iter().map(|(s, _, _)| s));
        for (c, _, _) in &p.carried {
            visit(c);
        }
    }
    for e in exprs {
        e.visit_columns(&mut visit);
    }
    let mut out = vec![];
    let mut say = |event: &BoundEvent, read: &[SystemColumn]| {
        if event.source != EventSource::TracepointBtf {
            return;
        }
        let mut named: Vec<&str> = read.iter().map(|s| s.name()).filter(|n| event.format.field(n).is_some()).collect();
        named.sort_unstable();
        named.dedup();
        for n in named {
            out.push(format!(
                "{}: {n} is the system column (the task's, read by the program), not the format record's field: \
                 a tp_btf program has no record",
                event.event_description()
            ));
        }
    };
    say(&k.event, &end);
    if let Some(p) = &k.pairing {
        for e in p.start_events() {
            say(e, &start);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::plan::{plan, PlanOptions};

    #[test]
    fn a_shadowed_comm_at_a_tp_btf_start_is_named_in_explain() {
        let sql = "SELECT i.comm, COUNT(*) FROM block.block_rq_issue i JOIN block.block_rq_complete c \
                   ON i.rq = c.rq GROUP BY i.comm";
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
        let text = p.explain();
        let via: Vec<&str> = text.lines().filter(|l| l.starts_with("[kernel] Via")).collect();
        assert_eq!(
            via,
            ["[kernel] Via        tracepoint:block:block_rq_issue: comm is the system column (the task's, read by \
              the program), not the format record's field: a tp_btf program has no record"]
        );
        // The classic record keeps its field: no note.
        let sql = "SELECT comm, COUNT(*) FROM block.block_rq_issue GROUP BY comm";
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
        assert!(!p.explain().contains("[kernel] Via"), "{}", p.explain());
    }
}
