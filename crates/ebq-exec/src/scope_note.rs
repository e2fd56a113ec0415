//! Why a scoped query answered (nearly) nothing: when the scope left out all
//! or most of the events the query's program ran for, and the event is one
//! known to fire outside the task ([`ebq_front::catalog::outside_task`]), one
//! line says how many, where they fired, and that `--system-wide` counts
//! them. Pure: the CLI passes the stats and says who the scope is.

use crate::QueryStats;
use ebq_front::plan::PhysicalPlan;

/// The share of the events the program ran for that the scope must have
/// left out before [`scope_note`] speaks: all, or at least 9 in 10.
pub const MOSTLY: (u64, u64) = (9, 10);

impl QueryStats {
    /// True when the scope left out events and they are all or most
    /// ([`MOSTLY`]) of the events the query's program ran for
    /// (`seen + out_of_scope`).
    pub fn mostly_out_of_scope(&self) -> bool {
        let total = self.seen as u128 + self.out_of_scope as u128;
        self.out_of_scope > 0 && self.out_of_scope as u128 * MOSTLY.1 as u128 >= total * MOSTLY.0 as u128
    }
}

/// The line to print on stderr after the stats line when `stats` says the
/// scope left out all or most events of `plan` and (some of) its events are
/// known to fire outside the task; `None` otherwise. `who` names the scope
/// (`"the -c command's processes"`, `"process 42"`).
pub fn scope_note(stats: &QueryStats, plan: &PhysicalPlan, who: &str) -> Option<String> {
    if !stats.mostly_out_of_scope() {
        return None;
    }
    let mut events: Vec<String> = vec![];
    let mut contexts: Vec<&str> = vec![];
    // A JOIN's end event is not scoped: only unpaired programs count out_of_scope.
    for k in plan.programs.iter().flat_map(|k| k.with_branches()).filter(|k| k.pairing.is_none()) {
        let Some(context) = ebq_front::catalog::outside_task::outside_task(&k.event.name) else { continue };
        let name = match &k.event.name {
            ebq_front::parse::EventName::Tracepoint { category, name } => format!("{category}.{name}"),
            other => other.to_string(),
        };
        if !events.contains(&name) {
            events.push(name);
        }
        if !contexts.contains(&context) {
            contexts.push(context);
        }
    }
    if events.is_empty() {
        return None;
    }
    let how_many = if stats.seen == 0 {
        format!("all {}", stats.out_of_scope)
    } else {
        format!("{} of {}", stats.out_of_scope, stats.seen + stats.out_of_scope)
    };
    Some(format!(
        "ebq: {how_many} {} events fired outside {who} ({}) and were left out; --system-wide counts them",
        events.join(", "),
        contexts.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(seen: u64, out_of_scope: u64) -> QueryStats {
        QueryStats { seen, matched: seen, out_of_scope, ..QueryStats::default() }
    }

    fn plan(sql: &str) -> PhysicalPlan {
        ebq_front::Engine::with_catalog(ebq_front::catalog::Catalog::fixture()).prepare(sql).unwrap().physical
    }

    #[test]
    fn all_or_nine_in_ten_left_out_is_mostly() {
        assert!(stats(0, 1).mostly_out_of_scope());
        assert!(stats(0, 340).mostly_out_of_scope());
        assert!(stats(10, 90).mostly_out_of_scope(), "exactly 90 %");
        assert!(!stats(11, 90).mostly_out_of_scope());
        assert!(!stats(0, 0).mostly_out_of_scope(), "nothing fired: nothing to explain");
        assert!(!stats(500, 0).mostly_out_of_scope());
        assert!(stats(1, u64::MAX - 1).mostly_out_of_scope(), "no overflow");
    }

    #[test]
    fn a_block_completion_left_out_names_system_wide() {
        let p = plan("SELECT COUNT(*) FROM block.block_rq_complete");
        assert_eq!(
            scope_note(&stats(0, 340), &p, "the -c command's processes").as_deref(),
            Some("ebq: all 340 block.block_rq_complete events fired outside the -c command's processes (interrupt or kworker context) and were left out; --system-wide counts them")
        );
        assert_eq!(
            scope_note(&stats(3, 337), &p, "process 42").as_deref(),
            Some("ebq: 337 of 340 block.block_rq_complete events fired outside process 42 (interrupt or kworker context) and were left out; --system-wide counts them")
        );
        assert_eq!(scope_note(&stats(300, 40), &p, "process 42"), None, "most were in scope");
        assert_eq!(scope_note(&stats(0, 0), &p, "process 42"), None);
    }

    #[test]
    fn events_of_the_task_itself_say_nothing() {
        // Other processes' system calls are left out by design: no note, however many.
        let p = plan("SELECT COUNT(*) FROM syscalls.sys_enter_read");
        assert_eq!(scope_note(&stats(0, 100_000), &p, "process 42"), None);
    }
}
