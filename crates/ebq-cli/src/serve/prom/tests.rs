use super::*;
use ebq::export::{MetricKind, Sample, SampleValue, Unit};

fn exposition() -> Shared {
    let shared = Shared::default();
    let labels = vec![("syscall".to_string(), "read".to_string())];
    let family = |name: &str, unit, kind, value| MetricFamily {
        name: name.into(),
        help: name.into(),
        unit,
        kind,
        integer: false,
        samples: vec![Sample { labels: labels.clone(), value }],
    };
    shared.lock().unwrap().queries.insert(
        "q".into(),
        vec![
            family("ebq_q_calls_total", None, MetricKind::Counter, SampleValue::Number(5.0)),
            family(
                "ebq_q_lat_seconds",
                Some(Unit::Seconds),
                MetricKind::Histogram,
                SampleValue::Histogram { buckets: vec![(0.5, 2), (1.5, 3)], count: 5, sum: Some(6.5) },
            ),
            family(
                "ebq_q_wait_seconds",
                Some(Unit::Seconds),
                MetricKind::Histogram,
                SampleValue::Histogram { buckets: vec![(0.5, 2), (f64::INFINITY, 1)], count: 3, sum: None },
            ),
            family(
                "ebq_q_size_bytes",
                Some(Unit::Bytes),
                MetricKind::Summary,
                SampleValue::Summary { quantiles: vec![(0.5, 64.0), (0.99, 4096.0)], count: None, sum: None },
            ),
        ],
    );
    shared.lock().unwrap().ready = true;
    shared
}

#[test]
fn families_encode_as_openmetrics() {
    let text = render(&exposition(), TextFormat::OpenMetrics);
    for line in [
        "# TYPE ebq_q_calls counter",
        "ebq_q_calls_total{syscall=\"read\"} 5.0",
        "# TYPE ebq_q_lat_seconds histogram",
        "# UNIT ebq_q_lat_seconds seconds",
        "ebq_q_lat_seconds_bucket{le=\"0.5\",syscall=\"read\"} 2",
        "ebq_q_lat_seconds_bucket{le=\"1.5\",syscall=\"read\"} 5",
        "ebq_q_lat_seconds_bucket{le=\"+Inf\",syscall=\"read\"} 5",
        "ebq_q_lat_seconds_count{syscall=\"read\"} 5",
        "ebq_q_lat_seconds_sum{syscall=\"read\"} 6.5",
        "ebq_q_wait_seconds_bucket{le=\"+Inf\",syscall=\"read\"} 3",
        "# TYPE ebq_q_size_bytes summary",
        "ebq_q_size_bytes{syscall=\"read\",quantile=\"0.99\"} 4096.0",
        "# EOF",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    // Without a known sum a histogram has no _sum, hence no _count (OpenMetrics wants both or neither).
    assert!(!text.contains("ebq_q_wait_seconds_count") && !text.contains("ebq_q_wait_seconds_sum"), "{text}");
}

/// Sends `request` to `port` and reads the whole answer.
fn ask(port: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn server() -> u16 {
    let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    serve(listener, exposition(), None);
    port
}

#[test]
fn content_is_negotiated_and_head_is_answered() {
    let port = server();
    let plain = ask(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(plain.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), "{plain}");
    assert!(plain.contains("# TYPE ebq_q_calls_total counter\n") && !plain.contains("# EOF"), "{plain}");
    let asked = ask(port, "GET /metrics HTTP/1.1\r\nAccept: text/plain;version=0.0.4\r\n\r\n");
    assert!(asked.contains("version=0.0.4"), "{asked}");
    let om = ask(port, "GET /metrics HTTP/1.1\r\naccept: application/openmetrics-text;version=1.0.0\r\n\r\n");
    assert!(om.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"), "{om}");
    assert!(om.ends_with("# EOF\n"), "{om}");
    let head = ask(port, "HEAD /metrics HTTP/1.1\r\n\r\n");
    let (head_lines, body) = head.split_once("\r\n\r\n").unwrap();
    assert!(head_lines.starts_with("HTTP/1.1 200 OK"), "{head}");
    let len: usize = head_lines.lines().find_map(|l| l.strip_prefix("Content-Length: ")).unwrap().parse().unwrap();
    assert_eq!(len, plain.split_once("\r\n\r\n").unwrap().1.len(), "HEAD tells the length GET sends");
    assert_eq!(body, "");
    let post = ask(port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
    assert!(post.starts_with("HTTP/1.1 405") && post.contains("Allow: GET, HEAD\r\n"), "{post}");
    let huge = ask(port, &format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_REQUEST_BYTES + 10)));
    assert!(huge.starts_with("HTTP/1.1 431"), "{huge}");
}

/// Issue 38: until every query has been started once, `/metrics` is 503 (and `/` answers).
#[test]
fn metrics_answer_503_until_the_queries_are_started() {
    let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let shared = exposition();
    shared.lock().unwrap().ready = false;
    serve(listener, shared.clone(), None);
    let early = ask(port, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(early.starts_with("HTTP/1.1 503 Service Unavailable\r\n"), "{early}");
    assert!(!early.contains("ebq_q_calls"), "{early}");
    assert!(ask(port, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 OK"));
    shared.lock().unwrap().ready = true;
    let ready = ask(port, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(ready.starts_with("HTTP/1.1 200 OK") && ready.contains("ebq_q_calls_total"), "{ready}");
}

/// Issue 38 item 5: `/ready` follows the start, `/healthz` the main loop's
/// heartbeat; neither shows a metric. (With TLS and basic auth: e2e `serve_tls::`.)
#[test]
fn probes_answer_the_state_and_nothing_else() {
    let listener = bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = listener.local_addr().unwrap().port();
    let shared = exposition();
    shared.lock().unwrap().ready = false;
    serve(listener, shared.clone(), None);
    let body = |answer: &str| answer.split_once("\r\n\r\n").unwrap().1.to_string();
    let starting = ask(port, "GET /ready HTTP/1.1\r\n\r\n");
    assert!(starting.starts_with("HTTP/1.1 503 "), "{starting}");
    assert_eq!(body(&starting), "starting\n");
    let live = ask(port, "GET /healthz HTTP/1.1\r\n\r\n");
    assert!(live.starts_with("HTTP/1.1 200 OK") && body(&live) == "ok\n", "starting is alive: {live}");
    shared.lock().unwrap().ready = true;
    shared.lock().unwrap().heartbeat = Some(Instant::now());
    let ready = ask(port, "GET /ready HTTP/1.1\r\n\r\n");
    assert!(ready.starts_with("HTTP/1.1 200 OK") && body(&ready) == "ready\n", "{ready}");
    assert!(ask(port, "GET /healthz HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 OK"));
    let Some(long_ago) = Instant::now().checked_sub(STALLED_AFTER + Duration::from_secs(1)) else { return };
    shared.lock().unwrap().heartbeat = Some(long_ago);
    let stalled = ask(port, "GET /healthz HTTP/1.1\r\n\r\n");
    assert!(stalled.starts_with("HTTP/1.1 503 ") && body(&stalled) == "stalled\n", "{stalled}");
}

#[test]
fn idle_and_half_sent_clients_do_not_delay_a_scrape() {
    let port = server();
    let idle: Vec<TcpStream> = (0..50).map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap()).collect();
    let half: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAcc").unwrap();
            s
        })
        .collect();
    // Let the server take all 60 connections before the scrape.
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let page = ask(port, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let took = started.elapsed();
    assert!(page.starts_with("HTTP/1.1 200 OK"), "{page}");
    assert!(took < Duration::from_millis(100), "the scrape took {took:?} with 60 slow clients connected");
    drop((idle, half));
}
