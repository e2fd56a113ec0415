//! Issue 3: `ebq report io` on a workload of known calls on an ext4 file and a
//! tmpfs file: per-file opens, reads, writes, bytes, Darshan access-size
//! buckets, sequential/consecutive counts, and per-file-system sums.

mod common;

use common::{ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::process::Command;

#[test]
fn io_report_counts_every_call_of_a_known_workload() {
    let dir = std::env::temp_dir().join(format!("ebq-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let disk = dir.join("disk.dat");
    let shm = std::path::PathBuf::from(format!("/dev/shm/ebq-report-{}.dat", std::process::id()));
    // File i: W write() of B·(i+1) bytes, lseek, R read(), W pwrite64, R pread64, close.
    let (w, r, b) = ([10u64, 20], [5u64, 8], 100u64);
    let cmd = format!(
        "{} fileio --files {},{} --writes {},{} --reads {},{} --size {b} --report {}",
        workload_bin().display(),
        disk.display(),
        shm.display(),
        w[0],
        w[1],
        r[0],
        r[1],
        dir.join("report.json").display()
    );
    let out = Command::new(ebq_bin()).args(["report", "io", "--format", "json", "-c", &cmd]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Json = serde_json::from_slice(&out.stdout).unwrap();
    let files = doc["files"].as_array().unwrap();
    for (i, (path, fs)) in [(&disk, "ext4"), (&shm, "tmpfs")].into_iter().enumerate() {
        let name = path.file_name().unwrap().to_str().unwrap();
        let f = files.iter().find(|f| f["file_name"] == name).unwrap_or_else(|| panic!("{name}: {doc}"));
        let size = b * (i as u64 + 1);
        use std::os::unix::fs::MetadataExt;
        assert_eq!(f["inode"].as_u64().unwrap(), std::fs::metadata(path).unwrap().ino());
        assert_eq!(f["fs_type"], fs, "{f}");
        let want = serde_json::json!({
            "opens": 1, "reads": 2 * r[i], "writes": 2 * w[i], "meta_ops": 2,
            "bytes_read": 2 * r[i] * size, "bytes_written": 2 * w[i] * size,
            // Each pass starts over at offset 0: all but its first call continue the previous one.
            "consec_reads": 2 * (r[i] - 1), "seq_reads": 2 * (r[i] - 1),
            "consec_writes": 2 * (w[i] - 1), "seq_writes": 2 * (w[i] - 1),
        });
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&f[k], v, "{name} {k}: {f}");
        }
        let bucket = if size < 100 { "0-100" } else { "100-1K" };
        assert_eq!(f["access_sizes"][bucket].as_u64().unwrap(), 2 * (r[i] + w[i]), "{f}");
        assert!(f["write_time_ns"].as_u64().unwrap() > 0 && f["slowest_op_ns"].as_u64().unwrap() > 0);
    }
    let tmpfs = doc["filesystems"].as_array().unwrap().iter().find(|f| f["mount_point"] == "/dev/shm").unwrap();
    assert_eq!((tmpfs["files"].as_u64(), tmpfs["writes"].as_u64()), (Some(1), Some(2 * w[1])), "{tmpfs}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&shm);
}

#[test]
fn text_report_names_files_and_file_systems() {
    let cmd = format!(
        "{} readzero --count 50 --report /tmp/ebq-report-text-{}.json",
        workload_bin().display(),
        std::process::id()
    );
    let out = Command::new(ebq_bin()).args(["report", "io", "-c", &cmd]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Per file system") && text.contains("zero (devtmpfs /dev"), "{text}");
    assert!(text.contains("reads 50 (50 B"), "{text}");
    let _ = std::fs::remove_file(format!("/tmp/ebq-report-text-{}.json", std::process::id()));
}
