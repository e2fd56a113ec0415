//! Issue 14 item 6 / issue 20 item 4: a JOIN whose start side is a union of
//! events. The shipped `biolatency-queued` (bcc biolatency -Q) starts a request
//! at block_rq_insert, or at block_rq_issue when its queue has no I/O
//! scheduler; on a private loop device, with scheduler `none` and with
//! `mq-deadline`, it times every request /sys/block/loopN/stat counts.

use crate::common;

use common::{assert_exact_or_accounted, engine, hist_total, rows_of, shipped_query, LoopDevice};

/// A new loop device with I/O scheduler `scheduler`, or `None` when this kernel has none such.
fn device_with(scheduler: &str) -> Option<LoopDevice> {
    let disk = LoopDevice::new();
    let file = format!("/sys/block/{}/queue/scheduler", disk.name());
    std::fs::write(&file, scheduler).ok()?;
    let now = std::fs::read_to_string(&file).unwrap();
    assert!(now.contains(&format!("[{scheduler}]")), "{now}");
    Some(disk)
}

/// Runs the shipped biolatency-queued on `disk` around its direct requests:
/// (requests in the histogram, requests the device completed, the query's stats).
fn queued_latency(disk: &LoopDevice) -> (u64, u64, ebq::QueryStats) {
    let sql = format!("{}\nWHERE c.rq.q.disk.disk_name = '{}'", shipped_query("biolatency-queued"), disk.name());
    let prepared = engine().prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    let plan = prepared.explain();
    for start in ["ebq_pair_start_0(__u64 *ctx)", "ebq_pair_start_1(__u64 *ctx)"] {
        assert!(plan.contains(start), "{plan}");
    }
    let (outs, stats, (requests, _)) = disk.traced_direct_io(prepared);
    let rows = rows_of(&outs);
    assert_eq!(rows.len(), 1, "{rows:?}");
    (hist_total(&rows[0], "usecs"), requests, stats)
}

#[test]
fn without_a_scheduler_issue_starts_every_request() {
    let disk = device_with("none").expect("every kernel has scheduler none");
    let (timed, requests, stats) = queued_latency(&disk);
    // Accounting (JOIN): timed + missed ends/starts + open + superseded = the device's; exact when none.
    assert_exact_or_accounted(timed, requests, &stats, "timed vs /sys/block/DEV/stat");
    assert_eq!(stats.pending_full, 0, "{stats:?}");
}

#[test]
fn with_mq_deadline_insert_starts_every_request() {
    let Some(disk) = device_with("mq-deadline") else {
        eprintln!("skipped: this kernel has no mq-deadline scheduler");
        return;
    };
    let (timed, requests, stats) = queued_latency(&disk);
    // Accounting (JOIN): as above.
    assert_exact_or_accounted(timed, requests, &stats, "timed vs /sys/block/DEV/stat");
    assert_eq!(stats.pending_full, 0, "{stats:?}");
}
