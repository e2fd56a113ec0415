//! Prometheus `/metrics`: the published families as OpenMetrics or 0.0.4
//! text ([`ebq::export::exposition`]) or as the protobuf exposition with
//! native histograms ([`ebq::export::exposition_proto`]), chosen by the
//! `Accept` header, served
//! by a small HTTP/1.1 server on std `TcpListener` (one GET/HEAD route).
//!
//! Every connection is answered on its own thread, so a client that sends
//! nothing, or half a request, never delays another scrape. What one client
//! can take is bounded: at most [`MAX_CONNECTIONS`] at once (more get `503`
//! at once), a request head of at most [`MAX_REQUEST_BYTES`] (`431`), and
//! [`REQUEST_TIMEOUT`] to send it (then the connection is closed).
//!
//! Until every configured query has been started once (attached, or failed
//! and marked `ebq_query_up 0`), `/metrics` answers `503`: a scrape never
//! sees a page without a configured query's `ebq_query_up`.
//!
//! With a web configuration ([`super::web`]) each connection is a TLS session
//! (its handshake inside the same timeout, on the connection's own thread) and a
//! request without the right basic-auth credentials gets `401`.
//!
//! Two paths answer without credentials (over TLS when it is on), for probes
//! (a kubelet's HTTP probe cannot send basic auth) — and say nothing but
//! their state, no metric, no query name:
//! - `/ready`: `200 ready` once every query has been started (the moment
//!   `/metrics` stops answering 503), `503 starting` before;
//! - `/healthz`: `200 ok` while the daemon's main loop goes round (or it is
//!   still starting its queries), `503 stalled` when the loop has not gone
//!   round for [`STALLED_AFTER`] (a liveness probe then restarts it).

use ebq::export::exposition::{encode, TextFormat};
use ebq::export::MetricFamily;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::web::{Auth, WebConfig};

/// Connections answered at once; Prometheus needs one per scrape.
pub const MAX_CONNECTIONS: usize = 128;
/// Longest request head (request line and headers) read.
pub const MAX_REQUEST_BYTES: usize = 8 << 10;
/// Time a client has to send its request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a client has to take the answer.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// `/healthz` answers 503 when the main loop (a 10 ms tick) has not gone
/// round for this long; a reload compiling several queries takes seconds.
pub const STALLED_AFTER: Duration = Duration::from_secs(120);

/// What one scrape shows: per query, its families (running totals) and ebq's own metrics.
#[derive(Debug, Default)]
pub struct Exposition {
    /// Query name → its published metric families.
    pub queries: BTreeMap<String, Vec<MetricFamily>>,
    /// ebq's own families (one sample per query, label `query`), merged by name at scrape time.
    pub own: BTreeMap<String, Vec<MetricFamily>>,
    /// Every query of the file has been started once (attached, or failed
    /// and marked `ebq_query_up 0`): until then `/metrics` answers `503`, so
    /// no page lacks a configured query's `ebq_query_up`.
    pub ready: bool,
    /// When the main loop last went round (`None`: not yet, still starting).
    pub heartbeat: Option<Instant>,
}

/// The shared exposition, read by the HTTP threads.
pub type Shared = Arc<Mutex<Exposition>>;

/// The text a scrape returns in `format`.
pub fn render(shared: &Shared, format: TextFormat) -> String {
    let Ok(state) = shared.lock() else { return String::new() };
    let own = own_families(&state);
    encode(state.queries.values().flatten().chain(own.values()), format)
}

/// The protobuf page a scrape that asks for it gets.
pub fn render_protobuf(shared: &Shared) -> Vec<u8> {
    let Ok(state) = shared.lock() else { return vec![] };
    let own = own_families(&state);
    ebq::export::exposition_proto::encode(state.queries.values().flatten().chain(own.values()))
}

/// ebq's own metrics: one family per name with every query's sample.
fn own_families(state: &Exposition) -> BTreeMap<&str, MetricFamily> {
    // Own metrics: one family per name with every query's sample.
    let mut merged: BTreeMap<&str, MetricFamily> = BTreeMap::new();
    for f in state.own.values().flatten() {
        merged
            .entry(&f.name)
            .or_insert_with(|| MetricFamily { samples: vec![], ..f.clone() })
            .samples
            .extend(f.samples.iter().cloned());
    }
    merged
}

/// Binds `addr` (before capabilities are dropped).
pub fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).map_err(|e| format!("error: cannot listen on {addr}: {e}"))
}

/// A connection: plain TCP, or TLS over it.
trait Conn: Read + Write {
    /// The socket's read timeout (the TLS handshake and request head share it).
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()>;
}

impl Conn for TcpStream {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        TcpStream::set_read_timeout(self, t)
    }
}

impl Conn for rustls::StreamOwned<rustls::ServerConnection, TcpStream> {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        self.sock.set_read_timeout(t)
    }
}

/// Serves `GET /metrics` on `listener` from background threads, with TLS and
/// basic auth when `web` says so.
pub fn serve(listener: TcpListener, shared: Shared, web: Option<Arc<WebConfig>>) {
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("ebq-metrics".into())
        .spawn(move || {
            for mut conn in listener.incoming().flatten() {
                if active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                    // A short answer fits the socket buffer: this write does not wait for the client.
                    let _ = conn.set_write_timeout(Some(Duration::from_millis(100)));
                    let _ = reply(&mut conn, false, "503 Service Unavailable", TEXT, "too many connections\n");
                    continue;
                }
                active.fetch_add(1, Ordering::AcqRel);
                let (shared, done, web) = (shared.clone(), active.clone(), web.clone());
                let spawned = std::thread::Builder::new().name("ebq-metrics-conn".into()).stack_size(256 << 10).spawn(
                    move || {
                        let _ = conn.set_write_timeout(Some(WRITE_TIMEOUT));
                        let web = web.as_deref();
                        match web.and_then(|w| w.tls.clone()) {
                            Some(tls) => {
                                if let Ok(session) = rustls::ServerConnection::new(tls) {
                                    let _ = answer(rustls::StreamOwned::new(session, conn), &shared, web);
                                }
                            }
                            None => {
                                let _ = answer(conn, &shared, web);
                            }
                        }
                        done.fetch_sub(1, Ordering::AcqRel);
                    },
                );
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::AcqRel);
                }
            }
        })
        .expect("spawn the /metrics thread");
}

const TEXT: &str = "text/plain; charset=utf-8";

/// The request head, read within [`REQUEST_TIMEOUT`] and [`MAX_REQUEST_BYTES`];
/// `Err(status)` when the client did not send one in time or sent too much.
fn read_head(conn: &mut impl Conn) -> Result<String, Option<&'static str>> {
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut req = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    loop {
        let end = req.windows(4).position(|w| w == b"\r\n\r\n");
        if end.unwrap_or(req.len()) > MAX_REQUEST_BYTES {
            return Err(Some("431 Request Header Fields Too Large"));
        }
        if let Some(end) = end {
            return Ok(String::from_utf8_lossy(&req[..end]).into_owned());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || conn.set_read_timeout(Some(left)).is_err() {
            return Err(None);
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
}

fn reply(conn: &mut impl Write, head_only: bool, status: &str, ctype: &str, body: &str) -> std::io::Result<()> {
    reply_bytes(conn, head_only, status, ctype, body.as_bytes())
}

fn reply_bytes(conn: &mut impl Write, head_only: bool, status: &str, ctype: &str, body: &[u8]) -> std::io::Result<()> {
    let allow = match status.get(..3) {
        Some("405") => "Allow: GET, HEAD\r\n",
        Some("401") => "WWW-Authenticate: Basic realm=\"ebq\", charset=\"UTF-8\"\r\n",
        _ => "",
    };
    write!(
        conn,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    )?;
    if !head_only {
        conn.write_all(body)?;
    }
    conn.flush()
}

fn answer(mut conn: impl Conn, shared: &Shared, web: Option<&WebConfig>) -> std::io::Result<()> {
    let head = match read_head(&mut conn) {
        Ok(h) => h,
        Err(Some(status)) => return reply(&mut conn, false, status, TEXT, "request too large\n"),
        Err(None) => return Ok(()),
    };
    let mut lines = head.lines();
    let mut parts = lines.next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let header = |name: &str| {
        head.lines().skip(1).find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    };
    let accept = header("accept");
    let path = target.split('?').next().unwrap_or("");
    let head_only = method == "HEAD";
    let (ready, heartbeat) = shared.lock().map_or((false, None), |s| (s.ready, s.heartbeat));
    // Probes: no credentials, nothing but the state.
    match (method, path) {
        ("GET" | "HEAD", "/ready") if ready => return reply(&mut conn, head_only, "200 OK", TEXT, "ready\n"),
        ("GET" | "HEAD", "/ready") => {
            return reply(&mut conn, head_only, "503 Service Unavailable", TEXT, "starting\n");
        }
        ("GET" | "HEAD", "/healthz") if heartbeat.is_some_and(|t| t.elapsed() > STALLED_AFTER) => {
            return reply(&mut conn, head_only, "503 Service Unavailable", TEXT, "stalled\n");
        }
        ("GET" | "HEAD", "/healthz") => return reply(&mut conn, head_only, "200 OK", TEXT, "ok\n"),
        _ => {}
    }
    if web.is_some_and(|w| w.check(header("authorization")) == Auth::Denied) {
        return reply(&mut conn, head_only, "401 Unauthorized", TEXT, "unauthorized\n");
    }
    match (method, path) {
        ("GET" | "HEAD", "/metrics") if !ready => {
            reply(&mut conn, head_only, "503 Service Unavailable", TEXT, "ebq serve: starting the queries\n")
        }
        ("GET" | "HEAD", "/metrics") if ebq::export::exposition_proto::wanted(accept) => {
            let ctype = ebq::export::exposition_proto::CONTENT_TYPE;
            reply_bytes(&mut conn, head_only, "200 OK", ctype, &render_protobuf(shared))
        }
        ("GET" | "HEAD", "/metrics") => {
            let format = TextFormat::negotiate(accept);
            reply(&mut conn, head_only, "200 OK", format.content_type(), &render(shared, format))
        }
        ("GET" | "HEAD", "/") => reply(
            &mut conn,
            head_only,
            "200 OK",
            TEXT,
            "ebq serve: metrics at /metrics; probes at /ready and /healthz\n",
        ),
        ("GET" | "HEAD", _) => reply(&mut conn, head_only, "404 Not Found", TEXT, "not found; try /metrics\n"),
        _ => reply(&mut conn, false, "405 Method Not Allowed", TEXT, "only GET and HEAD\n"),
    }
}

#[cfg(test)]
mod tests;
