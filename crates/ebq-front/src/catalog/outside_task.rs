//! Events that fire outside the task whose work they are: a block request
//! completes in the disk's interrupt or the loop driver's kworker, a timer
//! expires in the timer interrupt, a packet arrives in softirq. Under a
//! process scope (`-p`, `-c`, `--cgroup`) the programs check the *current*
//! task, so most such events are left out, and a COUNT over them answers 0.
//! This module names those events, so the CLI can say why, and how
//! `--system-wide` counts them (the executor's `scope_note`).

use crate::parse::EventName;

/// Where `event` mostly fires when it is outside the task it concerns (`"interrupt or
/// kworker context"`), or `None` for events that fire in the task that caused them
/// (system calls, faults, most tracepoints). A list of known events: an event not
/// named here is taken to fire in its task.
pub fn outside_task(event: &EventName) -> Option<&'static str> {
    let EventName::Tracepoint { category, name } = event else { return None };
    let name = name.as_str();
    Some(match category.as_str() {
        "block" if matches!(name, "block_rq_complete" | "block_rq_error" | "block_bio_complete" | "block_io_done") => {
            "interrupt or kworker context"
        }
        "irq" => "interrupt context",
        "irq_vectors" if name.ends_with("_entry") || name.ends_with("_exit") => "interrupt context",
        "timer"
            if matches!(
                name,
                "timer_expire_entry"
                    | "timer_expire_exit"
                    | "hrtimer_expire_entry"
                    | "hrtimer_expire_exit"
                    | "itimer_expire"
            ) =>
        {
            "timer interrupt context"
        }
        "workqueue" if name.starts_with("workqueue_execute") => "kworker context",
        "sched" if name.starts_with("sched_kthread_work_execute") => "kernel-thread context",
        "sched" if matches!(name, "sched_waking" | "sched_wakeup") => "the waking task's or interrupt context",
        "napi" if name == "napi_poll" => "softirq context",
        "net"
            if name.starts_with("netif_receive_skb")
                || name.starts_with("napi_gro_")
                || name.starts_with("netif_rx") =>
        {
            "softirq context"
        }
        "writeback"
            if matches!(
                name,
                "writeback_start"
                    | "writeback_exec"
                    | "writeback_written"
                    | "writeback_wait"
                    | "writeback_pages_written"
                    | "writeback_single_inode"
                    | "writeback_single_inode_start"
                    | "writeback_write_inode"
                    | "writeback_write_inode_start"
                    | "writeback_queue_io"
                    | "writeback_sb_inodes_requeue"
                    | "wbc_writepage"
            ) =>
        {
            "flusher kworker context"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(category: &str, name: &str) -> EventName {
        EventName::Tracepoint { category: category.into(), name: name.into() }
    }

    #[test]
    fn completions_interrupts_and_flushers_fire_outside_the_task() {
        assert_eq!(outside_task(&tp("block", "block_rq_complete")), Some("interrupt or kworker context"));
        assert_eq!(outside_task(&tp("irq", "softirq_entry")), Some("interrupt context"));
        assert_eq!(outside_task(&tp("irq_vectors", "local_timer_entry")), Some("interrupt context"));
        assert_eq!(outside_task(&tp("timer", "hrtimer_expire_entry")), Some("timer interrupt context"));
        assert_eq!(outside_task(&tp("workqueue", "workqueue_execute_start")), Some("kworker context"));
        assert_eq!(outside_task(&tp("writeback", "writeback_written")), Some("flusher kworker context"));
        assert_eq!(outside_task(&tp("sched", "sched_waking")), Some("the waking task's or interrupt context"));
    }

    #[test]
    fn events_of_the_task_itself_are_not_named() {
        for (c, n) in [
            ("syscalls", "sys_enter_read"),
            ("block", "block_rq_issue"),
            ("block", "block_bio_queue"),
            ("sched", "sched_switch"),
            ("sched", "sched_wakeup_new"),
            ("writeback", "writeback_dirty_folio"),
            ("timer", "timer_start"),
            ("workqueue", "workqueue_queue_work"),
        ] {
            assert_eq!(outside_task(&tp(c, n)), None, "{c}:{n}");
        }
        let timer = EventName::Timer { profile: true, unit: crate::parse::TimerUnit::Hz, n: 99 };
        assert_eq!(outside_task(&timer), None, "a profile sample of the task is what -c asks for");
    }
}
