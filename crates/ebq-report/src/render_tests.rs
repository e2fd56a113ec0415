//! The renderers ([`Report::write_text`], `write_json`, `write_html`,
//! `write_trace`, `write_darshan_log`) over a report built from fixture
//! operations: no kernel, no root, every output read back.

use super::*;

const SECOND: u64 = 1_000_000_000;

/// One operation on `data.bin` (ext4 at /data, 8:1, inode 42) by pid 100,
/// `ms` milliseconds after the report's origin, lasting 1 ms.
fn op(op: OpKind, via: Via, offset: i64, asked: u64, result: i64, ms: u64) -> Operation {
    let start_ns = SECOND + ms * 1_000_000;
    Operation {
        path: "data.bin".into(),
        op,
        via,
        pid: 100,
        tid: if via == Via::Syscall { 100 } else { 0 },
        rank: None,
        file: FileKey { dev_major: 8, dev_minor: 1, inode: 42 },
        fs_type: "ext4".into(),
        mount_point: "/data".into(),
        offset,
        positioned: via != Via::Syscall || op == OpKind::Read,
        asked,
        result,
        mem: (asked > 0).then_some(0x10000),
        start_ns,
        end_ns: start_ns + 1_000_000,
    }
}

/// An open, a 4 KiB write, a 4 KiB pread, a 100-byte io_uring read and a
/// close, over 2 s; the query saw 7 events and lost none.
fn report() -> Report {
    let ops = vec![
        op(OpKind::Open, Via::Syscall, 0, 0, 3, 1),
        op(OpKind::Write, Via::Syscall, 0, 4096, 4096, 2),
        op(OpKind::Read, Via::Syscall, 0, 4096, 4096, 3),
        op(OpKind::Read, Via::IoUring, 4096, 100, 100, 4),
        op(OpKind::Close, Via::Syscall, 0, 0, 0, 5),
    ];
    let fold = posix::fold(&ops, &mut |_| 4096);
    let stats = ebq::QueryStats { seen: 7, matched: 5, delivered: 5, ..Default::default() };
    let job = terminal::Job {
        origin_ns: SECOND,
        end_ns: 3 * SECOND,
        operations: ops.len(),
        stats: vec![("posix", stats)],
        aio: terminal::AioCount::default(),
        not_listed: listing::NotListed::default(),
        past_files: 0,
    };
    Report { job, fold, mpi: None, stdio: None, ops }
}

#[test]
fn text_names_the_run_and_the_file() {
    let mut out = vec![];
    report().write_text(&mut out, None).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().next(), Some("I/O report: 5 operations on 1 files in 1 file systems, 2.000 s"));
    assert!(text.contains("data.bin"), "{text}");
    // --top 1 of 1 file: no "top N of M".
    let mut top = vec![];
    report().write_text(&mut top, Some(1)).unwrap();
    assert_eq!(String::from_utf8(top).unwrap(), text);
}

#[test]
fn json_holds_darshans_counters() {
    let mut out = vec![];
    report().write_json(&mut out).unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    let c = &files[0]["counters"];
    assert_eq!(files[0]["file_name"], "data.bin");
    assert_eq!(files[0]["inode"], 42);
    assert_eq!(files[0]["dev"], "8:1");
    // POSIX_* counts system calls only; the io_uring read is EBQ_IO_URING_*'s.
    for (name, v) in [
        ("POSIX_OPENS", 1),
        ("POSIX_READS", 1),
        ("POSIX_WRITES", 1),
        ("POSIX_BYTES_READ", 4096),
        ("POSIX_BYTES_WRITTEN", 4096),
        ("EBQ_SYSCALL_READS", 1),
        ("EBQ_IO_URING_READS", 1),
        ("EBQ_IO_URING_BYTES_READ", 100),
    ] {
        assert_eq!(c[name], v, "{name} in {c}");
    }
    assert_eq!(doc["filesystems"].as_array().unwrap().len(), 1);
}

#[test]
fn html_is_one_page_with_the_file() {
    let mut out = vec![];
    report().write_html(&mut out).unwrap();
    let page = String::from_utf8(out).unwrap();
    assert!(page.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{}", &page[..80]);
    assert!(page.ends_with("</html>\n"));
    assert!(page.contains("data.bin"));
    for id in ["summary", "files", "heatmap", "accounting"] {
        assert!(page.contains(&format!("id=\"{id}\"")), "section {id}");
    }
}

#[test]
fn trace_has_a_row_per_operation() {
    let mut out = vec![];
    report().write_trace(&mut out).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(out))
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    assert_eq!(batches.len(), 1);
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 5);
    let strings = |name: &str| -> Vec<String> {
        let col = batch.column_by_name(name).unwrap();
        let col = col.as_any().downcast_ref::<arrow_array::StringArray>().unwrap();
        col.iter().map(|v| v.unwrap().to_string()).collect()
    };
    assert_eq!(strings("op"), ["open", "write", "read", "read", "close"]);
    assert_eq!(strings("via"), ["syscall", "syscall", "syscall", "io_uring", "syscall"]);
    assert_eq!(strings("dev"), ["8:1"; 5]);
    let length = batch.column_by_name("length").unwrap();
    let length = length.as_any().downcast_ref::<arrow_array::Int64Array>().unwrap();
    assert_eq!(length.iter().collect::<Vec<_>>(), [None, Some(4096), Some(4096), Some(100), None]);
    let start = batch.column_by_name("start").unwrap();
    let start = start.as_any().downcast_ref::<arrow_array::Float64Array>().unwrap();
    assert_eq!(start.values().to_vec(), [0.001, 0.002, 0.003, 0.004, 0.005]);
}

#[test]
fn darshan_log_reads_back() {
    let mut out = vec![];
    let job = darshan_log::Job { uid: 1000, jobid: 42, exe: "./app".into(), ..Default::default() };
    report().write_darshan_log(&mut out, job).unwrap();
    let log = darshan_read::read(&out).unwrap().log;
    assert_eq!((log.job.uid, log.job.jobid, log.job.nprocs), (1000, 42, 1));
    assert!(log.job.exe.starts_with("./app"), "{}", log.job.exe);
    assert_eq!(log.posix.len(), 1);
    let names = darshan_log::posix_counters();
    let get = |name: &str| log.posix[0].counters[names.iter().position(|n| n == name).unwrap()];
    assert_eq!([get("POSIX_OPENS"), get("POSIX_READS"), get("POSIX_WRITES"), get("POSIX_BYTES_READ")], [1, 1, 1, 4096]);
    assert_eq!(log.names.get(&log.posix[0].id).map(String::as_str), Some("data.bin"));
}
