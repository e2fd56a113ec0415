//! Single-slot aggregates: a query without GROUP BY (and without a hidden
//! COUNT(DISTINCT) key) and without WINDOW has exactly one group for the
//! whole run, so its value lives in slot 0 of a one-entry per-CPU array
//! instead of a per-CPU hash keyed by `{ window = 0 }`.
//!
//! ```text
//! before: [kernel] Aggregate  keys=[] values=[count] in PERCPU_HASH ebq_groups (max 10240 groups; …)
//! after:  [kernel] Aggregate  keys=[] values=[count] in PERCPU_ARRAY ebq_groups, 1 slot (no GROUP BY, no window; …)
//! ```
//!
//! Why: the verifier inlines a per-CPU array lookup into an address
//! computation (no helper call, no key hashing, no insert-and-retry path) —
//! what the hand-written libbpf reference programs do, and per event the
//! difference shows (`ebq bench pervent`, tp_entry and hist).
//!
//! Exactness: a slot starts zeroed, which is what a new hash entry was
//! filled with; MIN/MAX initialise on `count == 0` per CPU either way, and
//! user space skips CPUs whose count is 0. A slot with count 0 on every CPU
//! is reported as no group at all, so a run without matching events prints
//! what it printed with the hash (no row).
//!
//! Windowed keyless queries stay on the hash: a count window's number can
//! run any distance ahead of the reader, so it has no small slot domain; a
//! time window would fit two slots (window parity), but a pinned map's
//! reader could then no longer tell which window a slot holds (the hash key
//! says it; the window number lives in `.bss`, which is not pinned).

use super::KernelWindow;

/// True when an aggregate with `kernel_keys` GROUP BY (plus hidden) keys
/// under `window` has one group for the whole run.
pub fn is_single_slot(kernel_keys: usize, window: KernelWindow) -> bool {
    kernel_keys == 0 && window == KernelWindow::None
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::plan::{plan, KernelOutput, PhysicalPlan, PlanOptions};

    fn physical(sql: &str) -> PhysicalPlan {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        plan(sql, &l, &cat, &PlanOptions::default()).unwrap()
    }

    fn single_slot(sql: &str) -> bool {
        match physical(sql).programs[0].output {
            KernelOutput::Aggregate { single_slot, .. } => single_slot,
            KernelOutput::Rows { .. } => panic!("{sql} is an aggregate"),
        }
    }

    #[test]
    fn only_keyless_unwindowed_aggregates_use_one_slot() {
        for sql in [
            "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm = 'dd'",
            "SELECT COUNT(*), SUM(count), MIN(count), MAX(count), AVG(count), HIST(count) FROM syscalls.sys_enter_pread64",
            "SELECT P50(count), APPROX_COUNT_DISTINCT(pid) FROM syscalls.sys_enter_pread64",
        ] {
            assert!(single_slot(sql), "{sql}");
        }
        let explain = physical("SELECT COUNT(*) FROM syscalls.sys_enter_pread64").explain();
        assert!(
            explain.contains(
                "keys=[] values=[count] in PERCPU_ARRAY ebq_groups, 1 slot (no GROUP BY, no window; value 8 B"
            ),
            "{explain}"
        );
        for sql in [
            "SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd",
            // COUNT(DISTINCT x) groups on x in the kernel (a hidden key).
            "SELECT COUNT(DISTINCT pid) FROM syscalls.sys_enter_pread64",
            "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WINDOW(time, 1000, 1000)",
            "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WINDOW(count, 10, 10)",
        ] {
            assert!(!single_slot(sql), "{sql}");
        }
    }
}
