//! Issue 19 item 5: `ebq serve` over TLS with basic auth, configured by an
//! exporter-toolkit web configuration file (`web_config_file`). A test-made
//! certificate (openssl), a bcrypt hash of the password; a real Prometheus 2.42
//! scrapes over HTTPS with the credentials and its API returns the workload's
//! exact count; curl without credentials, or with a wrong password, gets 401.
//!
//! Issue 38 item 5: the probes (`/ready`, `/healthz`) answer over the same TLS
//! without credentials, `/ready` 503 until every query is attached and 200
//! after, and neither shows a metric.

use crate::common;

use common::{ebq_bin, free_port, http_get, sample, wait_for, Background, Workload};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// curl's status code for `GET https://127.0.0.1:port/metrics` trusting `ca`, with `user` (`name:password`).
fn status(port: u16, ca: &Path, user: Option<&str>) -> String {
    get(port, "/metrics", ca, user).0
}

/// curl's `GET https://127.0.0.1:port{path}` trusting `ca`, with `user`: (status code, body).
fn get(port: u16, path: &str, ca: &Path, user: Option<&str>) -> (String, String) {
    let body = std::env::temp_dir().join(format!("ebq-curl-{}-{port}", std::process::id()));
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-o"]).arg(&body).args(["-w", "%{http_code}", "--max-time", "10", "--cacert"]).arg(ca);
    if let Some(u) = user {
        cmd.args(["-u", u]);
    }
    let out = cmd.arg(format!("https://127.0.0.1:{port}{path}")).output().unwrap();
    let text = std::fs::read_to_string(&body).unwrap_or_default();
    let _ = std::fs::remove_file(&body);
    (String::from_utf8_lossy(&out.stdout).into_owned(), text)
}

/// A fresh directory `TAG-PID` holding a test-made certificate for 127.0.0.1
/// (openssl) and `web.yml` with TLS and the user `prom` (password `s3cret`):
/// (the directory, the certificate's path).
fn tls_with_basic_auth(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let st = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "openssl req");
    let hash = bcrypt::hash("s3cret", 10).unwrap();
    std::fs::write(
        dir.join("web.yml"),
        format!("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prom: {hash}\n"),
    )
    .unwrap();
    (dir, cert)
}

/// `ebq serve --config DIR/ebq.toml`, its stderr into `log`.
fn serve(dir: &Path, log: &Path) -> Command {
    let mut cmd = Command::new(ebq_bin());
    cmd.args(["serve", "--config"]).arg(dir.join("ebq.toml"));
    cmd.stdout(Stdio::null()).stderr(std::fs::File::create(log).unwrap());
    cmd
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn prometheus_scrapes_over_tls_with_basic_auth_and_others_get_401() {
    let (dir, cert) = tls_with_basic_auth("tls");
    let comm = format!("tls{}", std::process::id() % 100_000);
    let port = free_port();
    std::fs::write(
        dir.join("ebq.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nweb_config_file = \"web.yml\"\n\n[[query]]\nname = \"wl\"\n\
             sql = \"SELECT comm, COUNT(*) AS calls FROM syscalls.sys_enter_read WHERE comm = '{comm}' \
             GROUP BY comm WINDOW(time, 500)\"\n"
        ),
    )
    .unwrap();
    let log = dir.join("ebq.log");
    let daemon = Background(serve(&dir, &log).spawn().unwrap());
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for(60, "ebq serve to attach", || logged().contains("capabilities reduced").then_some(()));
    assert!(logged().contains(&format!("metrics at https://127.0.0.1:{port}/metrics")), "{}", logged());

    // Who gets in.
    assert_eq!(status(port, &cert, None), "401", "no credentials");
    assert_eq!(status(port, &cert, Some("prom:wrong")), "401", "wrong password");
    assert_eq!(status(port, &cert, Some("nobody:s3cret")), "401", "unknown user");
    assert_eq!(status(port, &cert, Some("prom:s3cret")), "200");
    // Plain HTTP gets no page (the server speaks TLS only).
    assert!(http_get(port, "/metrics").is_none_or(|(code, _)| code != 200));

    // Prometheus over HTTPS with the credentials.
    let prom_port = free_port();
    let prom_config = dir.join("prometheus.yml");
    std::fs::write(
        &prom_config,
        format!(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 500ms\nscrape_configs:\n  - job_name: ebq\n    \
             scheme: https\n    tls_config:\n      ca_file: {}\n    basic_auth:\n      username: prom\n      \
             password: s3cret\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n",
            cert.display()
        ),
    )
    .unwrap();
    let _prom = Background(
        Command::new("prometheus")
            .arg(format!("--config.file={}", prom_config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus (scripts/setup.sh installs it)"),
    );
    wait_for(60, "prometheus ready", || http_get(prom_port, "/-/ready").filter(|r| r.0 == 200));
    let query = |promql: &str| -> Vec<(f64, f64)> {
        let (code, body) = http_get(prom_port, &format!("/api/v1/query?query={}", url_encode(promql))).unwrap();
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["value"][0].as_f64().unwrap(), r["value"][1].as_str().unwrap().parse().unwrap()))
            .collect()
    };
    wait_for(30, "the target up over TLS", || query("up{job=\"ebq\"}").first().filter(|(_, v)| *v == 1.0).map(|_| ()));

    let w = Workload::start(&["readzero", "--count", "3000", "--bs", "3", "--comm", &comm]);
    w.go();
    let report = w.report();
    let series = format!("ebq_wl_calls_total{{job=\"ebq\",comm=\"{comm}\"}}");
    // Windows close every 500 ms; a scrape after the workload and two more windows has its total.
    std::thread::sleep(Duration::from_millis(1500));
    let after = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
    // timestamp() of the series is its last scrape's time.
    wait_for(30, "a scrape after the workload", || {
        query(&format!("timestamp({series})")).first().filter(|(_, scraped)| *scraped > after).map(|_| ())
    });
    let r = query(&series);
    assert_eq!(r.len(), 1, "{r:?}");
    let value = r[0].1;
    assert_eq!(value, 3000.0, "{report}");
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The kubelet's probes cannot send basic auth: `/ready` and `/healthz` answer
/// without credentials over the TLS the page uses. While the queries are
/// being compiled (held here by a clang wrapper that waits for a file) `/ready`
/// is 503 and `/metrics` too (401 without credentials); once every query is
/// attached `/ready` is 200. Neither probe path shows a metric or a query name.
#[test]
fn the_probes_answer_over_tls_without_credentials_and_ready_waits_for_the_attach() {
    let (dir, cert) = tls_with_basic_auth("probes");
    let (go, clang) = (dir.join("go"), dir.join("clang"));
    let real = String::from_utf8(Command::new("sh").args(["-c", "command -v clang"]).output().unwrap().stdout).unwrap();
    std::fs::write(
        &clang,
        format!("#!/bin/sh\nwhile [ ! -e {} ]; do sleep 0.05; done\nexec {} \"$@\"\n", go.display(), real.trim()),
    )
    .unwrap();
    std::fs::set_permissions(&clang, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let port = free_port();
    std::fs::write(
        dir.join("ebq.toml"),
        format!(
            "listen = \"127.0.0.1:{port}\"\nweb_config_file = \"web.yml\"\n\n[[query]]\nname = \"probed\"\n\
             sql = \"SELECT comm, COUNT(*) AS calls FROM syscalls.sys_enter_getppid GROUP BY comm WINDOW(time, 500)\"\n"
        ),
    )
    .unwrap();
    let log = dir.join("ebq.log");
    let daemon = Background(
        serve(&dir, &log)
            .env("EBQ_CLANG", &clang)
            // A cache of its own: a cached object would skip the held clang.
            .env("EBQ_CACHE_DIR", dir.join("cache"))
            .spawn()
            .unwrap(),
    );
    let logged = || std::fs::read_to_string(&log).unwrap_or_default();
    let creds = Some("prom:s3cret");
    // Listening (the socket is bound before the queries start), clang held.
    let starting = wait_for(60, "the TLS listener", || Some(get(port, "/ready", &cert, None)).filter(|r| r.0 != "000"));
    assert_eq!(starting, ("503".to_string(), "starting\n".to_string()), "{}", logged());
    assert_eq!(get(port, "/healthz", &cert, None), ("200".into(), "ok\n".into()), "alive while starting");
    assert_eq!(status(port, &cert, creds), "503", "/metrics waits for the queries too");
    assert_eq!(status(port, &cert, None), "401", "/metrics still wants credentials");
    assert!(!logged().contains("metrics at"), "no query may be attached yet: {}", logged());

    std::fs::write(&go, "").unwrap();
    wait_for(60, "ebq serve to attach", || logged().contains("capabilities reduced").then_some(()));
    let (code, body) = get(port, "/ready", &cert, None);
    assert_eq!((code.as_str(), body.as_str()), ("200", "ready\n"), "{}", logged());
    let (code, body) = get(port, "/healthz", &cert, None);
    assert_eq!((code.as_str(), body.as_str()), ("200", "ok\n"));
    let (code, page) = get(port, "/metrics", &cert, creds);
    assert_eq!(code, "200");
    assert_eq!(sample(&page, "ebq_query_up{query=\"probed\"}"), Some(1.0), "{page}");
    assert_eq!(status(port, &cert, None), "401", "the page itself still wants credentials");
    // Plain HTTP gets no probe answer either: the server speaks TLS only.
    assert!(http_get(port, "/ready").is_none_or(|(code, _)| code != 200));
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
}
