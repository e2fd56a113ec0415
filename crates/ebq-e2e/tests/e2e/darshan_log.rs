//! `ebq report io --darshan-log FILE` (issue 37): the binary Darshan log read
//! back by Darshan's own reader, PyDarshan 3.5.0 (darshan-util's C library
//! underneath), by `python -m darshan summary` and by Drishti.
//!
//! First a log written by hand with the library (every field known), then
//! the report of the `darshan` workload: each POSIX record PyDarshan reads
//! equals ebq's JSON report, which equals the workload's own tally.

use crate::common::python_with;
use crate::report::{assert_report_equals_tally, darshan_report, stdio_report, Mounts};
use ebq_report::darshan_log::{
    self, mpiio_counters, posix_counters, DxtRecord, Log, Record, Segment, MPIIO_FCOUNTERS, POSIX_FCOUNTERS,
};
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Reads a log with PyDarshan: the job, the executable, the mounts, the
/// names, the modules, and the POSIX, MPI-IO, DXT_POSIX and STDIO records.
const READ: &str = r#"
import darshan, json, sys
r = darshan.DarshanReport(sys.argv[1], read_all=True)
def records(mod):
    if mod not in r.records:
        return []
    if mod.startswith("DXT"):
        return [{"id": str(x["id"]), "rank": int(x["rank"]), "hostname": x["hostname"],
                 "write_segments": x["write_segments"].values.tolist(),
                 "read_segments": x["read_segments"].values.tolist()} for x in r.records[mod].to_df()]
    df = r.records[mod].to_df()
    c, f = df["counters"], df["fcounters"]
    out = []
    for i in range(len(c)):
        out.append({"id": str(int(c["id"].iloc[i])), "rank": int(c["rank"].iloc[i]),
                    "counters": {k: int(c[k].iloc[i]) for k in c.columns if k not in ("id", "rank")},
                    "fcounters": {k: float(f[k].iloc[i]) for k in f.columns if k not in ("id", "rank")}})
    return out
job = r.metadata["job"]
print(json.dumps({
    "job": {k: v for k, v in job.items() if k != "metadata"}, "metadata": job["metadata"],
    "exe": r.metadata["exe"], "mounts": [list(m) for m in r.data["mounts"]],
    "names": {str(k): v for k, v in r.name_records.items()},
    "modules": {k: {"ver": v["ver"], "num_records": v.get("num_records")} for k, v in r.data["modules"].items()},
    "POSIX": records("POSIX"), "MPI-IO": records("MPI-IO"), "DXT_POSIX": records("DXT_POSIX"),
    "STDIO": records("STDIO"),
}))
"#;

/// The venv's Python with PyDarshan 3.5.0 (scripts/setup.sh installs it; else the first test does).
fn pydarshan() -> PathBuf {
    python_with("darshan", "darshan==3.5.0")
}

/// What PyDarshan reads in the log at `path` (its C library's errors in the panic).
pub(crate) fn read_with_pydarshan(path: &Path) -> Json {
    let out = Command::new(pydarshan()).args(["-c", READ]).arg(path).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "PyDarshan could not read {}: {stderr}", path.display());
    // darshan-util prints its errors and goes on (a record it rejects is not returned).
    assert!(!stderr.contains("Error"), "darshan-util: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ebq-darshan-log-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A log written by hand reads back field by field: the format (header
/// size, region map, zlib regions, module versions) is darshan-util's.
#[test]
fn hand_made_log_reads_back_in_pydarshan_field_by_field() {
    let dir = temp_dir("hand");
    let mut log = Log {
        job: darshan_log::Job {
            uid: 1000,
            jobid: 4242,
            nprocs: 2,
            start: (1_700_000_000, 5),
            end: (1_700_000_010, 7),
            metadata: vec![("lib_ver".into(), "ebq-test".into()), ("EBQ_IO_URING_READS".into(), "3".into())],
            exe: "/usr/bin/app --flag".into(),
            mounts: vec![("ext4".into(), "/".into()), ("tmpfs".into(), "/dev/shm".into())],
        },
        ..Log::default()
    };
    let id = log.name_id("/dev/shm/a.dat");
    let counters: Vec<i64> = (0..posix_counters().len() as i64).map(|i| i * 3 + 1).collect();
    let fcounters: Vec<f64> = (0..POSIX_FCOUNTERS.len()).map(|i| i as f64 * 0.25).collect();
    log.posix.push(Record { id, rank: -1, counters: counters.clone(), fcounters: fcounters.clone() });
    let mpiio: Vec<i64> = (0..mpiio_counters().len() as i64).map(|i| i * 7 + 2).collect();
    log.mpiio.push(Record { id, rank: -1, counters: mpiio.clone(), fcounters: vec![1.5; MPIIO_FCOUNTERS.len()] });
    log.stdio.push(Record { id, rank: 0, counters: vec![5; 14], fcounters: vec![0.0; 15] });
    let seg = |offset, length, start| Segment { offset, length, start, end: start + 0.5 };
    log.dxt_posix.push(DxtRecord {
        id,
        rank: 1,
        hostname: "node1".into(),
        writes: vec![seg(0, 4096, 1.0)],
        reads: vec![seg(0, 100, 2.0), seg(100, 50, 3.0)],
    });
    let path = dir.join("hand.darshan");
    log.write(&path).unwrap();

    let r = read_with_pydarshan(&path);
    let job = &r["job"];
    for (k, v) in [
        ("uid", 1000),
        ("jobid", 4242),
        ("nprocs", 2),
        ("start_time_sec", 1_700_000_000),
        ("start_time_nsec", 5),
        ("end_time_sec", 1_700_000_010),
        ("end_time_nsec", 7),
    ] {
        assert_eq!(job[k], v, "{k}: {job}");
    }
    assert_eq!(job["log_ver"], "3.41");
    assert_eq!(r["metadata"]["lib_ver"], "ebq-test");
    assert_eq!(r["metadata"]["EBQ_IO_URING_READS"], "3");
    assert_eq!(r["exe"], "/usr/bin/app --flag");
    let mut mounts = r["mounts"].as_array().unwrap().clone();
    mounts.sort_by_key(|m| m.to_string());
    assert_eq!(Json::Array(mounts), serde_json::json!([["/", "ext4"], ["/dev/shm", "tmpfs"]]));
    assert_eq!(r["names"][id.to_string()], "/dev/shm/a.dat");
    assert_eq!(r["modules"]["POSIX"]["ver"], 4);
    assert_eq!(r["modules"]["DXT_POSIX"]["ver"], 1);
    let posix = r["POSIX"].as_array().unwrap();
    assert_eq!(posix.len(), 1);
    assert_eq!(posix[0]["id"], id.to_string());
    assert_eq!(posix[0]["rank"], -1);
    for (i, name) in posix_counters().iter().enumerate() {
        assert_eq!(posix[0]["counters"][name.as_str()], counters[i], "{name}");
    }
    for (i, name) in POSIX_FCOUNTERS.iter().enumerate() {
        assert_eq!(posix[0]["fcounters"][name], fcounters[i], "{name}");
    }
    for (module, version) in [("MPI-IO", 3), ("STDIO", 2)] {
        assert_eq!(r["modules"][module]["ver"], version, "{module}");
        assert_eq!(r["modules"][module]["num_records"], 1, "{module}: a record of this version reads back");
    }
    let mpi = &r["MPI-IO"][0];
    for (i, name) in mpiio_counters().iter().enumerate() {
        assert_eq!(mpi["counters"][name.as_str()], mpiio[i], "{name}");
    }
    for name in MPIIO_FCOUNTERS {
        assert_eq!(mpi["fcounters"][name], 1.5, "{name}");
    }
    let dxt = r["DXT_POSIX"].as_array().unwrap();
    assert_eq!(dxt.len(), 1, "{r}");
    assert_eq!(dxt[0]["hostname"], "node1");
    assert_eq!(dxt[0]["rank"], 1);
    assert_eq!(dxt[0]["write_segments"], serde_json::json!([[0.0, 4096.0, 1.0, 1.5]]));
    assert_eq!(dxt[0]["read_segments"], serde_json::json!([[0.0, 100.0, 2.0, 2.5], [100.0, 50.0, 3.0, 3.5]]));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The report of the `darshan` workload as a Darshan log: PyDarshan reads
/// every POSIX record ebq's JSON report has, with equal counters and
/// fcounters (which equal the workload's own tally); the job record says
/// what ran, with the job id given; `python -m darshan summary` writes its
/// page and Drishti reads the log and exits 0.
#[test]
fn report_as_darshan_log_equals_the_json_report_in_pydarshan_summary_and_drishti() {
    let m = Mounts::new();
    let log = m.dir.join("report.darshan");
    let trace = m.dir.join("trace.parquet");
    let extra: [&std::ffi::OsStr; 4] = ["--darshan-log".as_ref(), log.as_os_str(), "--job-id".as_ref(), "777".as_ref()];
    let (doc, tally) = darshan_report(&m, &extra);
    assert_report_equals_tally(&doc, &tally);
    let r = read_with_pydarshan(&log);
    assert_eq!(r["job"]["jobid"], 777);
    assert_eq!(r["job"]["uid"], unsafe { libc::getuid() });
    assert!(r["exe"].as_str().unwrap().contains(" darshan --files "), "{}", r["exe"]);
    assert_eq!(r["metadata"]["lib_ver"], format!("ebq-{}", env!("CARGO_PKG_VERSION")));
    assert_posix_records_equal(&r, &doc);
    // ebq's own counters, which Darshan's modules have no slot for, are job metadata.
    let syscall_reads: i64 =
        doc["files"].as_array().unwrap().iter().map(|f| f["counters"]["EBQ_SYSCALL_READS"].as_i64().unwrap()).sum();
    assert_eq!(r["metadata"]["EBQ_SYSCALL_READS"], syscall_reads.to_string());
    for k in ["EBQ_IO_URING_READS", "EBQ_AIO_WRITES", "EBQ_MMAP_READS", "EBQ_ERRORS"] {
        assert!(r["metadata"].get(k).is_some(), "{k} in {}", r["metadata"]);
    }
    // The run's times: the job lasted as long as the report says, to the microsecond.
    let secs = |s: &str| {
        r["job"][format!("{s}_time_sec")].as_f64().unwrap() + r["job"][format!("{s}_time_nsec")].as_f64().unwrap() / 1e9
    };
    let wall = doc["wall_time_s"].as_f64().unwrap();
    assert!((secs("end") - secs("start") - wall).abs() < 1e-4, "{} s vs {wall} s", secs("end") - secs("start"));

    // With --trace, each operation is also a DXT_POSIX segment.
    let log2 = m.dir.join("traced.darshan");
    let extra: [&std::ffi::OsStr; 4] =
        ["--darshan-log".as_ref(), log2.as_os_str(), "--trace".as_ref(), trace.as_os_str()];
    let (doc2, _) = darshan_report(&m, &extra);
    let r2 = read_with_pydarshan(&log2);
    assert_posix_records_equal(&r2, &doc2);
    let dxt = r2["DXT_POSIX"].as_array().unwrap();
    for f in doc2["files"].as_array().unwrap() {
        let id = id_of(&r2, f);
        let (reads, writes) =
            (f["counters"]["POSIX_READS"].as_i64().unwrap(), f["counters"]["POSIX_WRITES"].as_i64().unwrap());
        let segs =
            |k: &str| dxt.iter().filter(|d| d["id"] == id).map(|d| d[k].as_array().unwrap().len() as i64).sum::<i64>();
        // Failed calls (EBQ_ERRORS) are counted by Darshan's POSIX_READS but have no segment.
        let errors = f["counters"]["EBQ_ERRORS"].as_i64().unwrap();
        assert!(segs("read_segments") <= reads && segs("read_segments") + errors >= reads, "{}: reads", f["file_name"]);
        assert!(
            segs("write_segments") <= writes && segs("write_segments") + errors >= writes,
            "{}: writes",
            f["file_name"]
        );
    }

    // Darshan's job summary page.
    let out =
        Command::new(pydarshan()).args(["-m", "darshan", "summary"]).arg(&log).current_dir(&m.dir).output().unwrap();
    assert!(out.status.success(), "darshan summary: {}", String::from_utf8_lossy(&out.stderr));
    let html = m.dir.join("report_report.html");
    let size = std::fs::metadata(&html).map(|md| md.len()).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; {:?}",
            html.display(),
            std::fs::read_dir(&m.dir).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>()
        )
    });
    assert!(size > 10_000, "summary page of {size} bytes");
    // The page loads in headless Chromium without a console message, and draws.
    let dom = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(format!("--user-data-dir={}", m.dir.join("chromium").display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium (scripts/setup.sh installs it)");
    let console: Vec<String> =
        String::from_utf8_lossy(&dom.stderr).lines().filter(|l| l.contains("CONSOLE")).map(String::from).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert!(String::from_utf8_lossy(&dom.stdout).contains("Darshan Summary Report"));
    crate::profile::assert_drawn_in_chromium(&html);

    // Drishti's insights.
    python_with("drishti", "drishti-io");
    let drishti = pydarshan().with_file_name("drishti");
    let out = Command::new(&drishti).arg(&log).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("drishti:\n{stdout}");
    assert!(out.status.success(), "drishti: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("777"), "drishti names the job: {stdout}");
}

/// The log's record id of the JSON report's file `f`: by its name, or with
/// its device and inode when another file has that name.
fn id_of(r: &Json, f: &Json) -> String {
    let name = f["file_name"].as_str().unwrap();
    let dev_inode = format!("{name} ({} inode {})", f["dev"].as_str().unwrap(), f["inode"]);
    let names = r["names"].as_object().unwrap();
    let found = names.iter().find(|(_, n)| n.as_str() == Some(name) || n.as_str() == Some(&dev_inode));
    found.map(|(id, _)| id.clone()).unwrap_or_else(|| panic!("{name} not in the log's names: {}", r["names"]))
}

/// Every file of the JSON report is one POSIX record in the log, its
/// counters and fcounters (every one Darshan has) equal.
fn assert_posix_records_equal(r: &Json, doc: &Json) {
    let posix = r["POSIX"].as_array().unwrap();
    let files = doc["files"].as_array().unwrap();
    assert_eq!(posix.len(), files.len(), "one record per file");
    assert_eq!(r["modules"]["POSIX"]["num_records"], files.len());
    for f in files {
        let name = f["file_name"].as_str().unwrap();
        let dev_inode = format!("{name} ({} inode {})", f["dev"].as_str().unwrap(), f["inode"]);
        let id = r["names"]
            .as_object()
            .unwrap()
            .iter()
            .find(|(_, n)| n.as_str() == Some(name) || n.as_str() == Some(&dev_inode))
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{name} not in {}", r["names"]));
        let rec =
            posix.iter().find(|p| p["id"] == id.as_str()).unwrap_or_else(|| panic!("no POSIX record {id} ({name})"));
        for k in posix_counters() {
            assert_eq!(rec["counters"][&k], f["counters"].get(&k).cloned().unwrap_or(Json::from(0)), "{name}: {k}");
        }
        for k in POSIX_FCOUNTERS {
            let want = f["fcounters"].get(k).and_then(Json::as_f64).unwrap_or(0.0);
            assert_eq!(rec["fcounters"][k].as_f64(), Some(want), "{name}: {k}");
        }
    }
}

/// `--stdio --darshan-log` (issue 37 item 3): PyDarshan reads the STDIO
/// module (version 2) from ebq's log, one record per stream's path, named
/// by it, with counters equal to ebq's JSON report (which equal the
/// workload's own tally: the `report` module's test).
#[test]
fn stdio_records_read_back_in_pydarshan_equal_the_json_report() {
    let dir = temp_dir("stdio");
    let log = dir.join("stdio.darshan");
    let (work, doc, _) = stdio_report("log", &["--stdio".as_ref(), "--darshan-log".as_ref(), log.as_os_str()]);
    let r = read_with_pydarshan(&log);
    assert_eq!(r["modules"]["STDIO"]["ver"], 2);
    let (ebq, got) = (doc["stdio"]["files"].as_array().unwrap(), r["STDIO"].as_array().unwrap());
    assert_eq!(got.len(), ebq.len(), "{}", r["STDIO"]);
    assert!(ebq.iter().any(|e| e["file_name"].as_str().unwrap().ends_with("/s.dat")), "{}", doc["stdio"]);
    for e in ebq {
        let name = &e["file_name"];
        let rec = got
            .iter()
            .find(|g| &r["names"][g["id"].as_str().unwrap()] == name)
            .unwrap_or_else(|| panic!("no STDIO record named {name}: {}", r["names"]));
        assert_eq!(rec["rank"], 0);
        for k in ebq_report::stdio::COUNTERS {
            assert_eq!(rec["counters"][k], e["counters"][k], "{name} {k}");
        }
        for k in ebq_report::stdio::FCOUNTERS {
            let (a, b) = (rec["fcounters"][k].as_f64().unwrap(), e["fcounters"][k].as_f64().unwrap());
            assert!((a - b).abs() < 1e-9, "{name} {k}: {a} vs {b}");
        }
    }
    for d in [dir, work] {
        let _ = std::fs::remove_dir_all(d);
    }
}
