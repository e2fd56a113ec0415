//! Issue 38, "the strict-client fixes", against the real clients:
//! `promtool check metrics` passes a page with HIST, LHIST, quantiles and
//! file-name labels holding a backslash, a quote, an invalid byte and a name
//! cut inside a character, each escaped once (also in CSV and JSON rows); every
//! label the Grafana dashboard names is one a real scrape of `deploy/ebq.toml`
//! has; `/metrics` answers 503 until every query is up; failed OTLP pushes
//! are counted per query and sink.

use crate::common;
use crate::serve::{promtool, python_parse, scrape, tmp_dir, Daemon, OPENMETRICS};

use common::{ebq_bin, free_port, sample, wait_for};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::{Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The files of the escaping tests: (raw name, reads, the text ebq shows).
/// ebq's one escape: a backslash as `\\`, an invalid byte as `\xHH`, nothing
/// else; a name the kernel cut at 63 bytes inside "€" keeps its 2 bytes.
fn hostile_names() -> Vec<(Vec<u8>, usize, String)> {
    let cut = [vec![b'a'; 61], "€€".as_bytes().to_vec()].concat();
    vec![
        (b"back\\slash.txt".to_vec(), 3, r"back\\slash.txt".to_string()),
        (b"q\"uote.txt".to_vec(), 5, "q\"uote.txt".to_string()),
        (b"bad\xffname.txt".to_vec(), 7, r"bad\xffname.txt".to_string()),
        (cut, 11, format!(r"{}\xe2\x82", "a".repeat(61))),
    ]
}

/// Creates the hostile files in `dir`: (path, reads, shown text).
fn hostile_files(dir: &Path) -> Vec<(PathBuf, usize, String)> {
    hostile_names()
        .into_iter()
        .map(|(raw, n, shown)| {
            let path = dir.join(OsStr::from_bytes(&raw));
            std::fs::write(&path, [b'x'; 100]).unwrap();
            (path, n, shown)
        })
        .collect()
}

/// On a thread named `comm`: `n` read(2) calls of 4321 bytes on each file.
fn read_files(comm: String, files: Vec<(PathBuf, usize)>) {
    std::thread::spawn(move || {
        let name = std::ffi::CString::new(comm).unwrap();
        // SAFETY: PR_SET_NAME with a NUL-terminated string of at most 16 bytes.
        assert_eq!(unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr() as libc::c_ulong, 0, 0, 0) }, 0);
        let mut buf = vec![0u8; 4321];
        for (path, n) in files {
            let mut f = std::fs::File::open(&path).unwrap();
            for _ in 0..n {
                f.seek(std::io::SeekFrom::Start(0)).unwrap();
                assert_eq!(f.read(&mut buf).unwrap(), 100);
            }
        }
    })
    .join()
    .unwrap();
}

/// Prometheus' text escaping of a label value (what the page's bytes hold).
fn label_escaped(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// The query's event accounting on a page, for [`common::assert_exact_or_accounted`].
fn page_stats(page: &str, query: &str) -> ebq::QueryStats {
    let get = |m: &str| sample(page, &format!("{m}{{query=\"{query}\"}}")).unwrap_or(0.0) as u64;
    ebq::QueryStats {
        dropped: get("ebq_query_events_dropped_total"),
        missed: get("ebq_query_events_missed_total"),
        ..Default::default()
    }
}

#[test]
fn file_name_labels_escape_once_and_the_page_passes_promtool() {
    let dir = tmp_dir("fnames");
    let files_dir = dir.join("files");
    std::fs::create_dir_all(&files_dir).unwrap();
    let files = hostile_files(&files_dir);
    let comm = format!("fnm{}", std::process::id() % 100_000);
    // HIST(count) AS size_bytes and P99(count) AS p99_size_bytes share the base
    // `size_bytes`: the histogram keeps it, the summary is `…_size_quantiles_bytes`.
    let config = format!(
        r#"listen = "127.0.0.1:{{port}}"

[[query]]
name = "names"
sql = "SELECT file_name, COUNT(*) AS reads, SUM(count) AS req_bytes, HIST(count) AS size_bytes, LHIST(count, 0, 10000, 1000) AS len_bytes, P50(count) AS p50_size_bytes, P99(count) AS p99_size_bytes FROM syscalls.sys_enter_read WHERE comm = '{comm}' GROUP BY file_name"
interval = "500ms"
"#
    );
    let daemon = Daemon::start(&dir, &config);
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds
    read_files(comm, files.iter().map(|(p, n, _)| (p.clone(), *n)).collect());
    daemon.wait_closed_window("names");

    // The 0.0.4 page, as promtool reads it: no complaint at all.
    let (head, plain) = scrape(daemon.port, "GET", None);
    assert!(head.contains("version=0.0.4"), "{head}");
    let (code, lint) = promtool(&plain);
    assert_eq!((code, lint.as_str()), (0, ""), "promtool check metrics:\n{plain}");
    // No family name carries a type word (promtool's rule, for every family of the page).
    for line in plain.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let name = line.split(' ').next().unwrap();
        for word in ["counter", "gauge", "histogram", "summary"] {
            assert!(!name.contains(&format!("_{word}_")) && !name.ends_with(&format!("_{word}")), "{line}");
        }
    }
    assert!(plain.contains("# TYPE ebq_names_size_bytes histogram\n"), "{plain}");
    assert!(plain.contains("# TYPE ebq_names_len_bytes histogram\n"), "{plain}");
    assert!(plain.contains("# TYPE ebq_names_size_quantiles_bytes summary\n"), "{plain}");

    // The page's bytes: each label value escaped once by ebq (`\\`, `\xHH`) and once by the format (`\\`, `\"`).
    let stats = page_stats(&plain, "names");
    let wire: Vec<(&str, &str)> = vec![
        (r"back\\\\slash.txt", "one backslash: ebq's `\\\\`, then the format's escape of each"),
        (r#"q\"uote.txt"#, "one quote, escaped once"),
        (r"bad\\xffname.txt", "the invalid byte, ebq's `\\xff` with the format's escaped backslash"),
    ];
    for ((_, _, shown), (bytes, what)) in files.iter().zip(&wire) {
        assert_eq!(label_escaped(shown), *bytes, "{what}");
    }
    for (_, n, shown) in &files {
        let series = format!("ebq_names_reads_total{{file_name=\"{}\"}}", label_escaped(shown));
        let got = sample(&plain, &series).unwrap_or_else(|| panic!("no {series} on the page:\n{plain}"));
        common::assert_exact_or_accounted(got as u64, *n as u64, &stats, &series);
        // HIST, LHIST and the summary carry the same label.
        let l = format!("file_name=\"{}\"", label_escaped(shown));
        assert!(sample(&plain, &format!("ebq_names_size_bytes_count{{{l}}}")).is_some(), "{plain}");
        assert!(sample(&plain, &format!("ebq_names_len_bytes_bucket{{le=\"4999.0\",{l}}}")).is_some(), "{plain}");
        assert!(
            sample(&plain, &format!("ebq_names_size_quantiles_bytes{{{l},quantile=\"0.99\"}}")).is_some(),
            "{plain}"
        );
    }
    // Nothing was escaped twice anywhere on the page.
    assert!(!plain.contains(r"\\\\\\\\") && !plain.contains(r"\\\\x"), "{plain}");

    // What a strict parser reads back is ebq's text: one escape (prometheus_client's OpenMetrics parser).
    let om = daemon.metrics();
    let fams = python_parse(&om, true).unwrap_or_else(|e| panic!("the OpenMetrics parser refused the page: {e}\n{om}"));
    let mut got: Vec<String> = fams
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f[2].as_array().unwrap().iter())
        .filter(|s| s[0] == "ebq_names_reads_total")
        .map(|s| s[1]["file_name"].as_str().unwrap().to_string())
        .collect();
    got.sort();
    let mut want: Vec<String> = files.iter().map(|f| f.2.clone()).collect();
    want.sort();
    assert_eq!(got, want, "{om}");

    assert!(daemon.stop().success());
    progs_daemon.assert_gone();
}

/// The same names in CSV and JSON rows of an aggregate (GROUP BY file_name
/// reads the names late, `plan::late_names`): escaped once, like a row's.
#[test]
fn file_names_in_csv_and_json_windows_are_escaped_once() {
    let dir = tmp_dir("fnames-rows");
    let files = hostile_files(&dir);
    let comm = format!("fnr{}", std::process::id() % 100_000);
    let sql = format!(
        "SELECT file_name, COUNT(*) AS n FROM syscalls.sys_enter_read WHERE comm = '{comm}' GROUP BY file_name"
    );
    for format in ["csv", "json"] {
        let mut child = Command::new(ebq_bin())
            .args([sql.as_str(), "--format", format, "--duration", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (first, mut rest) = common::first_stderr_line(&mut child); // "ebq: tracing …": attached
        read_files(comm.clone(), files.iter().map(|(p, n, _)| (p.clone(), *n)).collect());
        // SAFETY: SIGINT to our child: it prints the final window and exits.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let mut stdout = String::new();
        child.stdout.take().unwrap().read_to_string(&mut stdout).expect("rows are UTF-8");
        let mut stderr = first;
        rest.read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "{stderr}");
        let stats = common::cli_stats(&stderr);
        let rows: BTreeMap<String, u64> = if format == "csv" {
            let mut lines = stdout.lines();
            let header: Vec<&str> = lines.next().unwrap().split(',').collect();
            let at = |c: &str| header.iter().position(|h| *h == c).unwrap();
            let (name, n) = (at("file_name"), at("n"));
            lines
                .map(|l| {
                    // The quote is CSV's own `""` in a quoted field; no other name has a comma or quote.
                    let cells: Vec<String> = if l.contains("\"q\"\"uote.txt\"") {
                        l.replace("\"q\"\"uote.txt\"", "q\"uote.txt").split(',').map(str::to_string).collect()
                    } else {
                        l.split(',').map(str::to_string).collect()
                    };
                    (cells[name].clone(), cells[n].parse().unwrap())
                })
                .collect()
        } else {
            stdout
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
                    (v["file_name"].as_str().unwrap().to_string(), v["n"].as_u64().unwrap())
                })
                .collect()
        };
        for (_, n, shown) in &files {
            let got = rows.get(shown).copied().unwrap_or_else(|| panic!("{format}: no row {shown:?}:\n{stdout}"));
            common::assert_exact_or_accounted(got, *n as u64, &stats, &format!("{format} {shown}"));
        }
        assert_eq!(rows.len(), files.len(), "{format}: only the files read:\n{stdout}");
        if format == "csv" {
            assert!(stdout.contains("\nback\\\\slash.txt,") || stdout.contains(",back\\\\slash.txt,"), "{stdout}");
        } else {
            assert!(stdout.contains(r#""file_name":"back\\\\slash.txt""#), "{stdout}");
            assert!(stdout.contains(r#""file_name":"bad\\xffname.txt""#), "{stdout}");
        }
    }
}

/// Label names a PromQL expression uses (`by (…)`, `without (…)`, `{name=…}`
/// matchers) and the ebq metrics it reads.
fn promql_names(expr: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let b = expr.as_bytes();
    let ident_end = |mut j: usize| {
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b':') {
            j += 1;
        }
        j
    };
    let skip_string = |mut k: usize| {
        k += 1;
        while k < b.len() && b[k] != b'"' {
            k += if b[k] == b'\\' { 2 } else { 1 };
        }
        k + 1
    };
    let (mut metrics, mut labels) = (BTreeSet::new(), BTreeSet::new());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(i),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let j = ident_end(i);
                let word = &expr[i..j];
                let rest = expr[j..].trim_start();
                if (word == "by" || word == "without") && rest.starts_with('(') {
                    let open = expr.len() - rest.len() + 1;
                    let close = open + expr[open..].find(')').expect("a closed label list");
                    labels.extend(expr[open..close].split(',').map(|l| l.trim().to_string()).filter(|l| !l.is_empty()));
                    i = close + 1;
                    continue;
                }
                if word.starts_with("ebq_") {
                    metrics.insert(word.to_string());
                }
                i = j;
            }
            b'{' => {
                let mut k = i + 1;
                loop {
                    while k < b.len() && (b[k] == b' ' || b[k] == b',') {
                        k += 1;
                    }
                    if k >= b.len() || b[k] == b'}' {
                        break;
                    }
                    let e = ident_end(k);
                    labels.insert(expr[k..e].to_string());
                    k = e;
                    while k < b.len() && b[k] != b'"' {
                        k += 1;
                    }
                    k = skip_string(k);
                }
                i = k + 1;
            }
            _ => i += 1,
        }
    }
    (metrics, labels)
}

/// Sample name → the label names its samples carry, from a text page.
fn page_labels(page: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in page.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let names = out.entry(line[..end].to_string()).or_default();
        if line[end..].starts_with('{') {
            let b = line.as_bytes();
            let mut k = end + 1;
            while k < b.len() && b[k] != b'}' {
                let eq = k + line[k..].find('=').unwrap();
                names.insert(line[k..eq].trim_start_matches(',').to_string());
                k = eq + 2; // past `="`
                while b[k] != b'"' {
                    k += if b[k] == b'\\' { 2 } else { 1 };
                }
                k += 1;
                if b[k] == b',' {
                    k += 1;
                }
            }
        }
    }
    out
}

#[test]
fn promql_names_finds_the_label_names_a_panel_uses() {
    let (m, l) = promql_names(
        r#"histogram_quantile(0.5, sum by (instance, major, minor, le) (rate(ebq_x_seconds_bucket{le="+Inf",instance=~"$instance"}[$__rate_interval]))) / ignoring(x) ebq_y_total"#,
    );
    assert_eq!(m.into_iter().collect::<Vec<_>>(), ["ebq_x_seconds_bucket", "ebq_y_total"]);
    assert_eq!(l.into_iter().collect::<Vec<_>>(), ["instance", "le", "major", "minor"]);
    let page = "# TYPE a counter\na_total{x=\"q\\\"{,}=\",yy=\"\"} 1\nb 2\n";
    let labels = page_labels(page);
    assert_eq!(labels["a_total"].iter().collect::<Vec<_>>(), ["x", "yy"]);
    assert!(labels["b"].is_empty());
}

/// The example config runs; every metric the Grafana dashboard queries is one
/// it exports, and every label a panel aggregates by, matches or shows in its
/// legend is one those metrics carry in a real scrape (or `instance`/`job`,
/// which Prometheus adds).
#[test]
fn the_dashboard_uses_only_metrics_and_labels_a_real_scrape_has() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let config = std::fs::read_to_string(root.join("deploy/ebq.toml")).unwrap();
    let dashboard = std::fs::read_to_string(root.join("deploy/grafana-ebq-storage.json")).unwrap();
    let board: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    let config = config
        .replace("listen = \"127.0.0.1:9435\"", "listen = \"127.0.0.1:{port}\"")
        .replace("\"10s\"", "\"1s\"")
        .replace("interval_ms = 10000", "interval_ms = 1000");
    assert!(config.contains("{port}"));
    let dir = tmp_dir("deploy-labels");
    let daemon = Daemon::start(&dir, &config);
    let progs_daemon = common::ProgWatch::of(daemon.child.id()); // the programs this daemon holds

    // Every query (expr, legend) of the panels and the template variables.
    let mut queries: Vec<(String, String, String)> = vec![];
    for panel in board["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap_or_default().to_string();
        for t in panel["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or_default().to_string();
            let legend = t["legendFormat"].as_str().unwrap_or_default().to_string();
            queries.push((title.clone(), expr, legend));
        }
    }
    for v in board["templating"]["list"].as_array().into_iter().flatten() {
        if let Some(q) = v["query"]["query"].as_str() {
            // label_values(metric, label): the metric and a label matcher on it.
            let inner = q.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')')).unwrap_or(q);
            let (metric, label) = inner.split_once(',').unwrap_or((inner, ""));
            queries.push((
                format!("variable {}", v["name"]),
                format!("{}{{{}=\"\"}}", metric.trim(), label.trim()),
                String::new(),
            ));
        }
    }
    assert!(queries.len() >= 15, "{queries:?}");
    let used: BTreeSet<String> = queries.iter().flat_map(|(_, e, _)| promql_names(e).0).collect();
    assert!(used.len() >= 10, "{used:?}");

    // Block I/O on this test's file system, so biolatency_disk has a series per disk.
    let io = dir.join("blockio");
    let labels = wait_for(90, "a sample of every metric the dashboard reads", || {
        let mut f = std::fs::File::create(&io).unwrap();
        f.write_all(&vec![7u8; 256 << 10]).unwrap();
        f.sync_all().unwrap();
        assert_eq!(std::fs::read(&io).unwrap().len(), 256 << 10);
        let page = daemon.metrics();
        let labels = page_labels(&page);
        used.iter().all(|m| labels.contains_key(m)).then_some(labels)
    });
    let added = ["instance", "job"];
    let mut problems = vec![];
    for (title, expr, legend) in &queries {
        let (metrics, names) = promql_names(expr);
        let carried: BTreeSet<&str> =
            metrics.iter().flat_map(|m| labels[m].iter().map(String::as_str)).chain(added).collect();
        let in_legend =
            legend.split("{{").skip(1).filter_map(|p| p.split_once("}}")).map(|(l, _)| l.trim().to_string());
        for name in names.into_iter().chain(in_legend) {
            if !carried.contains(name.as_str()) {
                problems
                    .push(format!("{title}: label `{name}` is not on {metrics:?} (they carry {carried:?}): {expr}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The disk panels group by the disk's name, as ebq exports it.
    assert!(labels["ebq_biolatency_disk_seconds_bucket"].contains("disk"), "{labels:?}");

    assert!(daemon.stop().success());
    progs_daemon.assert_gone();
}

/// Scrapes in a tight loop from the daemon's start: no `200` page lacks a
/// configured query's `ebq_query_up` (before, the first ~0.3 s answered 200
/// with none); until then the answer is `503`.
#[test]
fn metrics_answer_503_until_every_query_is_up() {
    let dir = tmp_dir("ready");
    let port = free_port();
    let q = |name: &str, sql: &str| format!("[[query]]\nname = \"{name}\"\nsql = \"{sql}\"\n");
    let names = ["reads", "writes", "hist", "bad"];
    let config = format!(
        "listen = \"127.0.0.1:{port}\"\n{}{}{}{}",
        q("reads", "SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WINDOW(time, 500)"),
        q("writes", "SELECT comm, COUNT(*) AS calls FROM syscalls.sys_enter_write GROUP BY comm WINDOW(time, 500)"),
        q("hist", "SELECT HIST(count) AS size_bytes, P99(count) AS p99_size_bytes FROM syscalls.sys_enter_pread64 WINDOW(time, 500)"),
        // Cannot start where kprobes are not built in (up = 0 with its error); else attached.
        q("bad", "SELECT COUNT(*) AS calls FROM kprobe:vfs_read WINDOW(time, 500)"),
    );
    let path = dir.join("ebq.toml");
    std::fs::write(&path, config).unwrap();
    let log = dir.join("ebq.log");
    let child = Command::new(ebq_bin())
        .args(["serve", "--config"])
        .arg(&path)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let daemon = Daemon { child, port, log: log.clone(), config: path };
    let progs_daemon = common::ProgWatch::of(daemon.child.id());
    let (mut refused, mut unavailable, mut complete) = (0u32, 0u32, 0u32);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    // Until the daemon has reduced its capabilities (everything started) and 20 pages after.
    while complete < 20 {
        assert!(std::time::Instant::now() < deadline, "no complete page in 60 s:\n{}", daemon.log());
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            refused += 1;
            continue;
        }
        let (head, body) = scrape(port, "GET", Some(OPENMETRICS));
        if head.starts_with("HTTP/1.1 503 ") {
            unavailable += 1;
            continue;
        }
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}\n{body}");
        for q in names {
            assert!(
                body.contains(&format!("ebq_query_up{{query=\"{q}\"}} ")),
                "a 200 page without query `{q}`'s ebq_query_up (after {unavailable} 503s):\n{body}"
            );
        }
        if daemon.log().contains("capabilities reduced") {
            complete += 1;
        }
    }
    eprintln!("before the first page: {refused} connections refused, {unavailable} answers 503; then {complete} complete pages");
    assert!(daemon.stop().success());
    progs_daemon.assert_gone();
}

/// A tiny HTTP server answering every request with `500`, counting them.
fn refusing_receiver() -> (u16, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut s) = conn else { continue };
            let mut got = vec![];
            let mut buf = [0u8; 8192];
            // The whole request (head and Content-Length body), then the refusal.
            while let Ok(n) = s.read(&mut buf) {
                got.extend_from_slice(&buf[..n]);
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
                        .unwrap_or(0);
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ = s
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope");
        }
    });
    (port, count)
}

/// A failing OTLP push is counted per query and sink on `/metrics`: every
/// push failed (the receiver answers 500, or nobody listens), so the counter
/// is exactly the pushes made: one per closed window plus the query's own
/// counters once (their `interval` is an hour).
#[test]
fn failed_otlp_pushes_are_counted_per_query_and_sink() {
    let (refusing, answered) = refusing_receiver();
    for (what, endpoint_port) in [("answers 500", refusing), ("closed port", free_port())] {
        let dir = tmp_dir(&format!("otlp-fail-{}", what.replace(' ', "-")));
        let comm = format!("otf{}", std::process::id() % 100_000);
        let config = format!(
            r#"listen = "127.0.0.1:{{port}}"

[otlp]
endpoint = "http://127.0.0.1:{endpoint_port}/v1/metrics"
interval = "1h"

[[query]]
name = "wl"
sql = "SELECT COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' WINDOW(count, 1000)"
"#
        );
        let before = answered.load(std::sync::atomic::Ordering::SeqCst);
        let daemon = Daemon::start(&dir, &config);
        let progs_daemon = common::ProgWatch::of(daemon.child.id());
        let w = common::Workload::start(&["readzero", "--count", "3000", "--comm", &comm]);
        w.go();
        w.report();
        let failures = |page: &str| sample(page, "ebq_export_failures_total{query=\"wl\",sink=\"otlp\"}");
        // Windows and failures are published together: one page holds both of one moment.
        // Until every read is counted or accounted, and each 1000 of them closed a window.
        let (page, windows, failed) = wait_for(30, "the reads' windows", || {
            let page = daemon.metrics();
            let windows = sample(&page, "ebq_query_windows_total{query=\"wl\"}")?;
            let matched = sample(&page, "ebq_query_events_matched_total{query=\"wl\"}")?;
            let stats = page_stats(&page, "wl");
            let done = matched as u64 + common::lost(&stats) >= 3000 && windows == (matched / 1000.0).floor();
            done.then(|| (page.clone(), windows, failures(&page).unwrap_or_else(|| panic!("{page}"))))
        });
        let matched = sample(&page, "ebq_query_events_matched_total{query=\"wl\"}").unwrap();
        common::assert_exact_or_accounted(matched as u64, 3000, &page_stats(&page, "wl"), "reads");
        assert!(windows >= 1.0, "{page}");
        assert_eq!(failed, windows + 1.0, "{what}: every push failed: each window's and the own counters' once");
        if endpoint_port == refusing {
            let got = answered.load(std::sync::atomic::Ordering::SeqCst) - before;
            assert_eq!(got as f64, failed, "every refused push reached the receiver");
        }
        let log = daemon.log();
        assert!(log.contains(&format!("OTLP push failed ({failed} so far)")), "{log}");
        // The page with the counter still passes promtool.
        let (_, plain) = scrape(daemon.port, "GET", None);
        assert_eq!(promtool(&plain), (0, String::new()), "{plain}");
        assert!(daemon.stop().success());
        progs_daemon.assert_gone();
    }
}
