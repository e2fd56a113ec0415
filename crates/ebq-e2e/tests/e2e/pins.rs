//! Pinned maps for external samplers: a C program built with libbpf against
//! the header ebq writes reads the pinned group map and gets the workload's
//! exact numbers, the same as ebq's own output; the pins go when ebq exits
//! (SIGTERM included) unless --keep-pins.

use crate::common;

use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SQL: &str = "SELECT fd, COUNT(*) AS calls, SUM(count) AS bytes, MAX(count) AS mx, HIST(count) AS h \
                   FROM syscalls.sys_enter_pread64 WHERE comm = '{comm}' GROUP BY fd";

/// Per fd: (count, sum, max, HIST bucket index → events).
type Groups = BTreeMap<u64, (u64, u64, u64, BTreeMap<u32, u64>)>;

fn pin_dir(tag: &str) -> PathBuf {
    PathBuf::from(format!("/sys/fs/bpf/ebq-test/{tag}-{}", std::process::id()))
}

/// What the pread workload issued: `--calls` per fd at size 64 * ((j % 5) + 1),
/// the sizes in HIST buckets closed as `log2` says (the CLI's Floor, serve's Ceil).
fn expected(report: &serde_json::Value, log2: ebq::hist::Log2) -> Groups {
    per_fd(report)
        .into_iter()
        .map(|(fd, (calls, bytes))| {
            let sizes: Vec<u64> = (0..calls).map(|j| 64 * ((j % 5) + 1)).collect();
            let mut hist = BTreeMap::new();
            for s in &sizes {
                *hist.entry(log2.index(*s)).or_default() += 1;
            }
            assert_eq!(bytes, sizes.iter().sum::<u64>());
            (fd, (calls, bytes, *sizes.iter().max().unwrap(), hist))
        })
        .collect()
}

/// Builds the C reader against `header`.
fn build_reader(header: &Path, tag: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/pin_reader.c");
    let exe = std::env::temp_dir().join(format!("ebq-pin-reader-{tag}-{}", std::process::id()));
    let out = Command::new("gcc")
        .args(["-Wall", "-Werror", "-O1"])
        .arg(format!("-DEBQ_LAYOUT=\"{}\"", header.display()))
        .arg(&src)
        .args(["-lbpf", "-o"])
        .arg(&exe)
        .output()
        .expect("gcc");
    assert!(out.status.success(), "the reader does not build:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

/// Runs the reader; returns its groups and (seen, matched, dropped).
fn read_pins(reader: &Path) -> (Groups, (u64, u64, u64)) {
    let out = Command::new(reader).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "reader failed: {}{text}", String::from_utf8_lossy(&out.stderr));
    let mut groups = Groups::new();
    let mut stats = None;
    for line in text.lines() {
        let fields: BTreeMap<&str, &str> = line.split(' ').skip(1).filter_map(|kv| kv.split_once('=')).collect();
        let n = |k: &str| fields[k].parse::<u64>().unwrap();
        if line.starts_with("group ") {
            assert_eq!(n("window"), 0, "a query without WINDOW keys everything on window 0");
            let hist = fields["hist"]
                .split(',')
                .map(|b| b.split_once(':').unwrap())
                .map(|(i, c)| (i.parse().unwrap(), c.parse().unwrap()))
                .collect();
            groups.insert(n("fd"), (n("count"), n("sum"), n("max"), hist));
        } else if line.starts_with("stats ") {
            stats = Some((n("seen"), n("matched"), n("dropped")));
        }
    }
    (groups, stats.expect("a stats line"))
}

/// ebq's JSON lines (one per histogram bucket) → groups.
fn ebq_groups(json: &str) -> Groups {
    let mut groups = Groups::new();
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let g = |k: &str| v[k].as_u64().unwrap();
        let e = groups.entry(g("fd")).or_insert((g("calls"), g("bytes"), g("mx"), BTreeMap::new()));
        e.3.insert(64 - g("lo").leading_zeros(), g("count"));
    }
    groups
}

fn wait_for(path: &Path, ebq: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        if let Some(status) = ebq.try_wait().unwrap() {
            panic!("ebq exited ({status}) before writing {}", path.display());
        }
        assert!(Instant::now() < deadline, "ebq did not pin in 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_libbpf_reader_gets_the_exact_counts_while_ebq_runs_and_sigterm_unpins() {
    let dir = pin_dir("live");
    let _tidy = PinParents(dir.clone());
    let header = ebq::runtime::pin::default_header_path(&dir);
    let comm = format!("pinlive{}", std::process::id() % 10000);
    let out_file = std::env::temp_dir().join(format!("ebq-pins-live-{}.json", std::process::id()));
    let mut ebq = Command::new(ebq_bin())
        .arg(SQL.replace("{comm}", &comm))
        .args(["--format", "json", "-o"])
        .arg(&out_file)
        .arg("--pin")
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&header, &mut ebq);
    assert!(dir.join("groups").exists() && dir.join("stats").exists());
    let reader = build_reader(&header, "live");
    let w = Workload::start(&["pread", "--fds", "3", "--calls", "7,30,52", "--comm", &comm, "--fd-base", "200"]);
    w.go();
    let want = expected(&w.report(), ebq::hist::Log2::Floor);
    let (got, (seen, matched, dropped)) = read_pins(&reader);
    assert_eq!(got, want, "the C reader's groups");
    assert_eq!((matched, dropped), (80 + 9, 0));
    assert!(seen >= matched);
    // SIGTERM: ebq ends cleanly, prints the same totals, and unpins.
    // SAFETY: kill on a child we spawned.
    unsafe { libc::kill(ebq.id() as i32, libc::SIGTERM) };
    let out = ebq.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json = std::fs::read_to_string(&out_file).unwrap();
    let _ = std::fs::remove_file(&out_file);
    let _ = std::fs::remove_file(&reader);
    assert_eq!(ebq_groups(&json), want, "ebq's own output");
    assert!(!dir.exists(), "the pin directory outlived ebq");
    assert!(!header.exists(), "the header outlived ebq");
}

#[test]
fn keep_pins_leave_the_final_totals_and_the_header() {
    let dir = pin_dir("keep");
    let _tidy = PinParents(dir.clone());
    let header = std::env::temp_dir().join(format!("ebq-pins-keep-{}.h", std::process::id()));
    let comm = format!("pinkeep{}", std::process::id() % 10000);
    let workload = format!(
        "{} pread --fds 2 --calls 11,4 --comm {comm} --fd-base 300 --report /dev/null",
        workload_bin().display()
    );
    let out = Command::new(ebq_bin())
        .arg(SQL.replace("{comm}", &comm))
        .args(["--format", "json", "-c", &workload, "--keep-pins", "--pin"])
        .arg(&dir)
        .arg("--pin-header")
        .arg(&header)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want: Groups = [
        (300, (11, 1984, 320, BTreeMap::from([(7, 3), (8, 4), (9, 4)]))),
        (301, (4, 640, 256, BTreeMap::from([(7, 1), (8, 2), (9, 1)]))),
    ]
    .into_iter()
    .collect();
    assert_eq!(ebq_groups(&String::from_utf8_lossy(&out.stdout)), want, "ebq's own output");
    assert!(dir.join("groups").exists() && header.exists(), "--keep-pins keeps the pins and the header");
    let reader = build_reader(&header, "keep");
    let (got, (_, matched, dropped)) = read_pins(&reader);
    for p in ["groups", "stats"] {
        std::fs::remove_file(dir.join(p)).unwrap();
    }
    std::fs::remove_dir(&dir).unwrap();
    let _ = std::fs::remove_file(&header);
    let _ = std::fs::remove_file(&reader);
    assert_eq!(got, want, "the C reader after ebq exited");
    assert_eq!((matched, dropped), (15, 0));
}

#[test]
fn pin_errors_are_clear_and_leave_nothing_behind() {
    // Each run's own programs (its fdinfo while it ran, if it got that far) are gone after it.
    let run = |extra: &[&str]| {
        let (out, progs) = output_watched(
            Command::new(ebq_bin())
                .arg("SELECT COUNT(*) FROM syscalls.sys_enter_pread64")
                .args(["--duration", "0.2"])
                .args(extra),
        );
        progs.assert_gone();
        assert!(!out.status.success(), "{extra:?} should fail");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let taken = pin_dir("taken");
    std::fs::create_dir_all(&taken).unwrap();
    let err = run(&["--pin", taken.to_str().unwrap()]);
    std::fs::remove_dir(&taken).unwrap();
    assert!(err.contains("the path exists"), "{err}");
    let off_bpffs = std::env::temp_dir().join(format!("ebq-not-bpffs-{}", std::process::id()));
    let err = run(&["--pin", off_bpffs.to_str().unwrap()]);
    assert!(err.contains("is not on a BPF file system (bpffs)"), "{err}");
    assert!(!off_bpffs.exists());
    let err = run(&["--keep-pins"]);
    assert!(err.contains("--keep-pins and --pin-header need --pin DIR"), "{err}");
    let rows = pin_dir("rows");
    let _tidy = PinParents(rows.clone());
    let (out, progs) = output_watched(
        Command::new(ebq_bin())
            .args(["SELECT pid FROM syscalls.sys_enter_pread64", "--duration", "0.2", "--pin"])
            .arg(&rows),
    );
    progs.assert_gone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--pin needs an aggregate query"), "{err}");
    assert!(!rows.exists());
}

#[test]
fn under_ebq_serve_the_c_reader_and_metrics_give_the_same_numbers() {
    let dir = pin_dir("serve");
    let _tidy = PinParents(dir.clone());
    let header = ebq::runtime::pin::default_header_path(&dir);
    let comm = format!("pinsrv{}", std::process::id() % 10000);
    let tmp = std::env::temp_dir().join(format!("ebq-pins-serve-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let port = free_port();
    let config = tmp.join("ebq.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\n\n[[query]]\nname = \"p\"\nsql = \"{}\"\ninterval = \"100ms\"\npin = \"{}\"\n",
            SQL.replace("{comm}", &comm),
            dir.display()
        ),
    )
    .unwrap();
    let mut serve = common::Background(
        Command::new(ebq_bin()).args(["serve", "--config"]).arg(&config).stderr(Stdio::piped()).spawn().unwrap(),
    );
    let progs = ProgWatch::of(serve.0.id()); // the programs this daemon holds, not the machine's
    wait_for(&header, &mut serve.0);
    let reader = build_reader(&header, "serve");
    let w = Workload::start(&["pread", "--fds", "3", "--calls", "5,17,40", "--comm", &comm, "--fd-base", "300"]);
    w.go();
    let want = expected(&w.report(), ebq::hist::Log2::Ceil); // serve buckets HISTs as Prometheus does
                                                             // Running totals are published every 100 ms: wait until /metrics has them all.
    let deadline = Instant::now() + Duration::from_secs(30);
    let page = loop {
        let page = http_get(port, "/metrics").map(|(_, body)| body).unwrap_or_default();
        if want.iter().all(|(fd, g)| sample(&page, &format!("ebq_p_calls_total{{fd=\"{fd}\"}}")) == Some(g.0 as f64)) {
            break page;
        }
        assert!(Instant::now() < deadline, "{page}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let (got, _) = read_pins(&reader);
    assert_eq!(got, want, "the C reader's groups");
    for (fd, (calls, bytes, mx, _)) in &got {
        let l = format!("{{fd=\"{fd}\"}}");
        assert_eq!(sample(&page, &format!("ebq_p_calls_total{l}")), Some(*calls as f64), "{page}");
        assert_eq!(sample(&page, &format!("ebq_p_bytes_total{l}")), Some(*bytes as f64), "{page}");
        assert_eq!(sample(&page, &format!("ebq_p_mx{l}")), Some(*mx as f64), "{page}");
    }
    assert!(serve.stop().success());
    assert!(!dir.exists() && !header.exists(), "pins outlived ebq serve");
    let _ = std::fs::remove_file(&reader);
    let _ = std::fs::remove_dir_all(&tmp);
    progs.assert_gone();
}
