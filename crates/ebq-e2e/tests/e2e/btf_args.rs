//! Issue 20 item 2: raw tracepoint arguments and the kernel structs behind them, on
//! the running kernel through tp_btf programs. Direct I/O on a private loop device
//! gives ground truth: /sys/block/loopN/stat counts the requests, and the bytes are
//! what dd wrote and read.

use crate::common;

use common::{
    assert_exact_or_accounted, cli_stats, ebq_bin, engine, rows_of, s, u, LoopDevice, DIRECT_IO_BYTES as BYTES,
};
use std::process::Command;

/// Runs `sql` (with `DISK` replaced by the device's name) around [`LoopDevice::direct_requests`]
/// on a new device, checking that it attaches as tp_btf;
/// returns the rows, the device's completed requests meanwhile, and the query's stats.
fn around_direct_io(sql: &str) -> (Vec<common::Row>, u64, ebq::QueryStats, LoopDevice) {
    let disk = LoopDevice::new();
    let sql = sql.replace("DISK", &disk.name());
    let prepared = engine().prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    assert!(prepared.explain().contains("tp_btf, BPF_PROG_TYPE_TRACING"), "{}", prepared.explain());
    let (outs, stats, (requests, _)) = disk.traced_direct_io(prepared);
    (rows_of(&outs), requests, stats, disk)
}

#[test]
fn disk_name_groups_requests_with_the_devices_own_counts_and_bytes() {
    let (rows, requests, stats, disk) = around_direct_io(
        "SELECT rq.q.disk.disk_name AS disk, COUNT(*) AS requests, SUM(rq.__data_len) AS data_len, \
         SUM(nr_bytes) AS nr_bytes, MIN(rq.q.disk.major) AS major FROM block.block_rq_complete \
         WHERE rq.q.disk.disk_name = 'DISK' GROUP BY rq.q.disk.disk_name",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(s(&rows[0], "disk"), disk.name());
    // Accounting (one event, aggregate): requests <= device <= requests + missed; exact when 0 missed.
    assert_exact_or_accounted(u(&rows[0], "requests"), requests, &stats, "requests vs /sys/block/DEV/stat");
    if common::lost(&stats) == 0 {
        assert_eq!(u(&rows[0], "data_len"), BYTES, "{rows:?}");
        assert_eq!(u(&rows[0], "nr_bytes"), BYTES, "{rows:?}");
    }
    assert_eq!(u(&rows[0], "major") << 20, disk.dev_t() & !0xfffff, "{rows:?}");
}

#[test]
fn issue_and_completion_pair_on_the_request_pointer() {
    // As libbpf-tools' biolatency: the start map is keyed by the struct request address.
    let (rows, requests, stats, _) = around_direct_io(
        "SELECT COUNT(*) AS requests, SUM(i.rq.__data_len) AS bytes, MIN(c.time - i.time) AS minlat \
         FROM block.block_rq_issue i JOIN block.block_rq_complete c ON i.rq = c.rq \
         WHERE c.rq.q.disk.disk_name = 'DISK'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    // Accounting (JOIN): pairs + missed ends + missed starts + open + superseded + lost + evicted
    // cover the device's requests; exact when none.
    assert_exact_or_accounted(u(&rows[0], "requests"), requests, &stats, "pairs vs /sys/block/DEV/stat");
    if common::lost(&stats) == 0 {
        assert_eq!(u(&rows[0], "bytes"), BYTES, "{rows:?}");
    }
    assert!(u(&rows[0], "minlat") > 0, "{rows:?}");
    assert_eq!(stats.pending_full, 0, "{stats:?}");
}

#[test]
fn biosnoop_summary_names_the_disk_and_the_issuing_process_with_the_devices_counts() {
    // The shipped query, scoped to the private device (tp_btf at both ends: comm and pid are
    // the issuing task's system columns, the disk its gendisk's name).
    let disk = LoopDevice::new();
    let shipped = common::shipped_query("biosnoop-summary");
    let scope = format!("WHERE c.rq.q.disk.disk_name = '{}'\nGROUP BY", disk.name());
    let sql = shipped.replacen("GROUP BY", &scope, 1);
    let prepared = engine().prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    let plan = prepared.explain();
    // comm is the system column (the helper's definition and its call), not a record field.
    assert!(plan.matches("ebq_current_comm(").count() >= 2, "{plan}");
    assert_eq!(plan.matches("tp_btf, BPF_PROG_TYPE_TRACING").count(), 2, "{plan}");
    let (reads, writes) = (disk.reads(), disk.writes());
    let (outs, stats, (requests, _)) = disk.traced_direct_io(prepared);
    let (reads, writes) = (disk.reads() - reads, disk.writes() - writes);
    let rows = rows_of(&outs);
    assert!(rows.iter().all(|r| s(r, "disk") == disk.name()), "{rows:?}");
    let total = |pick: &dyn Fn(&common::Row) -> bool| -> (u64, u64) {
        rows.iter().filter(|r| pick(r)).fold((0, 0), |(n, b), r| (n + u(r, "requests"), b + u(r, "bytes")))
    };
    // Every request the device completed, split as its own counters split them
    // (accounting, JOIN: pairs + missed ends + open + superseded; exact when none).
    let what = "pairs vs /sys/block/DEV/stat";
    assert_exact_or_accounted(total(&|_| true).0, requests, &stats, what);
    assert_exact_or_accounted(total(&|r| s(r, "flags").ends_with("Write")).0, writes, &stats, what);
    assert_exact_or_accounted(total(&|r| s(r, "flags").ends_with("Read")).0, reads, &stats, what);
    if common::lost(&stats) == 0 {
        assert_eq!(total(&|_| true).1, BYTES, "{rows:?}");
    }
    // dd issued them (the loop driver submits in the caller's context, or in a kworker when deferred).
    assert!(rows.iter().any(|r| s(r, "comm") == "dd" && u(r, "pid") > 0), "{rows:?}");
    assert_eq!((stats.pending_full, stats.missed, stats.missed_starts), (0, 0, 0), "{stats:?}");
}

#[test]
fn part_name_names_the_partition_a_request_addresses() {
    // This kernel reads no partition tables (no CONFIG_MSDOS_PARTITION or EFI), so the
    // requests address the whole disk: partition 0, named as the disk, whose dev_t it has.
    let (rows, requests, stats, disk) = around_direct_io(
        "SELECT part_name(rq.q.disk.disk_name, rq.part.__bd_flags.counter & 255) AS part, \
         rq.part.bd_dev AS part_dev, COUNT(*) AS requests FROM block.block_rq_complete \
         WHERE rq.q.disk.disk_name = 'DISK' \
         GROUP BY rq.q.disk.disk_name, rq.part.__bd_flags.counter & 255, rq.part.bd_dev",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(s(&rows[0], "part"), disk.name(), "{rows:?}");
    assert_eq!(u(&rows[0], "part_dev"), disk.dev_t(), "{rows:?}");
    // Accounting (one event, aggregate): requests <= device <= requests + missed; exact when 0 missed.
    assert_exact_or_accounted(u(&rows[0], "requests"), requests, &stats, "requests vs /sys/block/DEV/stat");
}

#[test]
fn a_misspelt_member_is_a_positioned_error_from_the_cli() {
    let sql = "SELECT rq.q.dsk.disk_name, COUNT(*) FROM block.block_rq_complete GROUP BY 1";
    let out = Command::new(ebq_bin()).arg(sql).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], "error: `struct request_queue` has no member `dsk` at 1:13", "{stderr}");
    assert_eq!(lines[1], format!("1 | {sql}"));
    assert_eq!(lines[2], format!("{}^^^", " ".repeat(4 + 12)));
    // The running kernel's request_queue has dozens of members: the first 24 are listed.
    assert!(lines[3].starts_with("  help: did you mean `disk`? members: "), "{stderr}");
    assert!(
        lines[3].ends_with("more; `ebq describe tracepoint:block:block_rq_complete rq.q` lists its members"),
        "{stderr}"
    );
}

#[test]
fn describe_lists_raw_arguments_and_walks_into_structs() {
    let describe = |args: &[&str]| {
        let out = Command::new(ebq_bin()).arg("describe").args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = describe(&["block:block_rq_complete"]);
    for line in [
        "  rq                       struct request *                 u64\n",
        "  error                    blk_status_t                     u8\n",
        "  nr_bytes                 unsigned int                     u32\n",
    ] {
        assert!(text.contains(line), "{text}");
    }
    let text = describe(&["block:block_rq_complete", "rq.q.disk"]);
    assert!(text.starts_with("tracepoint:block:block_rq_complete rq.q.disk: struct gendisk *\n"), "{text}");
    assert!(text.contains("\n  disk_name                char[32]                         string(32)\n"), "{text}");
}

#[test]
fn a_tp_btf_program_keeps_to_the_c_process_tree() {
    // Direct I/O on a loop device is issued in the writer's context: dd, a child of sh,
    // followed by the (classic) fork tracker into the tp_btf program's pid set.
    let disk = LoopDevice::new();
    let cmd = format!("sh -c 'dd if=/dev/zero of={} bs=4k count=300 oflag=direct status=none'", disk.dev.display());
    let sql = format!(
        "SELECT COUNT(*) AS requests, SUM(rq.__data_len) AS bytes FROM block.block_rq_issue \
         WHERE rq.q.disk.disk_name = '{}'",
        disk.name()
    );
    let out = Command::new(ebq_bin()).args(["-c", &cmd, "--format", "json", &sql]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Accounting (-c, one event): requests + missed + fork/exit events missed + untracked
    // cover dd's 300; exact when none.
    let stats = cli_stats(&String::from_utf8_lossy(&out.stderr));
    assert_exact_or_accounted(row["requests"].as_u64().unwrap(), 300, &stats, "requests vs dd's count=300");
    if common::lost(&stats) == 0 {
        assert_eq!(row["bytes"].as_u64(), Some(300 * 4096), "{row}");
    }
}

#[test]
fn bundles_refuse_raw_arguments_with_the_reason() {
    let bundle = std::env::temp_dir().join(format!("ebq-btf-args-{}.ebq", std::process::id()));
    let sql = "SELECT COUNT(*) FROM block.block_rq_complete WHERE nr_bytes > 0";
    let out = Command::new(ebq_bin()).arg("compile").arg("-o").arg(&bundle).arg(sql).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "plan error: tracepoint:block:block_rq_complete: bundles hold classic tracepoint programs; a query that \
         reads raw arguments (tp_btf) runs with `ebq` on the host itself"
    );
    assert!(!bundle.exists());
}

#[test]
fn io_uring_requests_are_read_through_struct_io_kiocb() {
    // fio writes 1 MiB in 4 KiB requests through io_uring: 256 IORING_OP_WRITE (23)
    // submissions, each naming the file's fd (`req->file` is assigned only later).
    let file = std::env::temp_dir().join(format!("ebq-btf-uring-{}.dat", std::process::id()));
    let cmd = format!(
        "fio --name=u --filename={} --size=1M --bs=4k --rw=write --ioengine=io_uring --iodepth=4 --output=/dev/null",
        file.display()
    );
    let sql = "SELECT req.opcode AS opcode, COUNT(*) AS n, MIN(req.cqe.fd) >= 0 AS fd_ok \
               FROM io_uring.io_uring_submit_req GROUP BY req.opcode";
    let out = Command::new(ebq_bin()).args(["-c", &cmd, "--format", "json", sql]).output().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let row: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((row["opcode"].as_u64(), row["fd_ok"].as_bool()), (Some(23), Some(true)), "{row}");
    // Accounting (-c, one event): submissions + missed + fork/exit missed + untracked = fio's 256.
    let stats = cli_stats(&String::from_utf8_lossy(&out.stderr));
    assert_exact_or_accounted(row["n"].as_u64().unwrap(), 256, &stats, "io_uring submissions vs fio's 256");
}
