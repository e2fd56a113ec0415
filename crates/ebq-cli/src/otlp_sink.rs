//! `--sink otlp+http://HOST:PORT`: rows (and the windows of an aggregate) as
//! OTLP log records, POSTed as protobuf to `http://HOST:PORT/v1/logs`
//! ([`ebq::export::otlp_logs`] says how a row becomes a record).
//!
//! `write` converts the rows and queues them; a sender thread of the sink's
//! own takes up to `batch=` rows at a time (or what came within [`LINGER`])
//! and POSTs them, so neither the rings nor the other sinks ever wait for the
//! receiver. The queue holds at most `queue=` rows, the request in flight
//! included: while the receiver is down or slow the rows wait there, and
//! beyond the bound a row is refused and counted dropped.
//!
//! A request that fails to connect, times out, or is answered 408, 429 or
//! 5xx is sent again after a backoff ([`BACKOFF_FIRST`], doubling up to
//! [`BACKOFF_MAX`]); any other status fails its rows for good (a receiver that
//! refuses them will refuse them again), as do the records a 2xx reply's
//! `partial_success` says were rejected. A retry after a timeout may deliver
//! rows twice (at least once, as OTLP exporters are). At exit the sender keeps
//! trying for up to [`FLUSH_TIMEOUT`]; what it could not send is counted
//! `queued` (lost), so delivered + failed + queued = written, and written +
//! dropped = the rows the query gave this sink.

use crate::sink_books::SinkBooks;
use crate::sink_spec::OtlpSpec;
use ebq::export::otlp::{self, OtlpConfig, OtlpError, LOGS_PATH};
use ebq::export::otlp_logs::{self, LogRecord};
use ebq::sink::{DeliveryProbe, Sink};
use ebq::Output;
use prost::Message;
use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long `finish` lets the sender try to get the queued rows out.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the sender waits for a batch to fill before sending what it has.
pub const LINGER: Duration = Duration::from_millis(200);
/// The wait before the first retry of a request.
pub const BACKOFF_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between retries.
pub const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// Bounds one request (connect, send, reply).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What the writer and the sender share.
struct Shared {
    state: Mutex<State>,
    /// Signalled when rows are queued or `finish` starts.
    wake: Condvar,
    /// `queue=`: rows queued plus rows in flight, at most.
    bound: usize,
}

#[derive(Default)]
struct State {
    pending: VecDeque<LogRecord>,
    /// Rows of the request being sent (they still count against the bound).
    in_flight: usize,
    /// Set by `finish`: send what is queued, and give up at this time.
    deadline: Option<Instant>,
    books: SinkBooks,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An OTLP/HTTP logs receiver as a [`Sink`].
pub struct OtlpSink {
    shared: Arc<Shared>,
    sender: Option<JoinHandle<()>>,
}

/// The sender thread's own: where and how it posts.
struct Sender {
    name: String,
    agent: ureq::Agent,
    url: String,
    resource: Vec<(String, String)>,
    batch: usize,
}

impl OtlpSink {
    /// A sink for `spec` (called `name` in messages) whose records carry
    /// `config`'s resource and, for a run scoped to one, the cgroup's.
    /// Nothing is sent yet.
    pub fn create(name: &str, spec: &OtlpSpec, config: &OtlpConfig, cgroup: Option<&str>) -> Result<OtlpSink, String> {
        let url = otlp::signal_url(&spec.endpoint, LOGS_PATH).map_err(|e| format!("error: --sink `{name}`: {e}"))?;
        let sender = Sender {
            name: name.to_string(),
            agent: otlp::agent(REQUEST_TIMEOUT),
            url,
            resource: otlp_logs::resource_attributes(config, cgroup),
            batch: spec.batch,
        };
        let shared = Arc::new(Shared { state: Mutex::default(), wake: Condvar::new(), bound: spec.queue });
        let theirs = shared.clone();
        let sender = std::thread::Builder::new()
            .name("ebq-otlp".into())
            .spawn(move || sender.send_all(&theirs))
            .map_err(|e| format!("error: --sink `{name}`: cannot start its sender thread: {e}"))?;
        Ok(OtlpSink { shared, sender: Some(sender) })
    }
}

impl Sink for OtlpSink {
    /// Queues the rows as records; beyond the bound they are refused (counted).
    fn write(&mut self, o: &Output) -> io::Result<()> {
        if o.batch.num_rows() == 0 {
            return Ok(());
        }
        let records = otlp_logs::log_records(o);
        let mut s = self.shared.lock();
        let room = self.shared.bound.saturating_sub(s.pending.len() + s.in_flight).min(records.len());
        s.books.taken += room as u64;
        s.books.refused += (records.len() - room) as u64;
        s.pending.extend(records.into_iter().take(room));
        drop(s);
        self.shared.wake.notify_one();
        Ok(())
    }

    /// Lets the sender try for up to [`FLUSH_TIMEOUT`]; what it did not get
    /// out is counted `queued` (lost at exit), not failed.
    fn finish(&mut self) -> io::Result<()> {
        self.shared.lock().deadline = Some(Instant::now() + FLUSH_TIMEOUT);
        self.shared.wake.notify_one();
        if let Some(sender) = self.sender.take() {
            let _ = sender.join();
        }
        let mut s = self.shared.lock();
        let left = (s.pending.len() + s.in_flight) as u64;
        s.books.closed = Some(left);
        Ok(())
    }

    fn delivery(&self) -> Option<DeliveryProbe> {
        let shared = self.shared.clone();
        Some(Arc::new(move || shared.lock().books.delivery()))
    }
}

impl Drop for OtlpSink {
    /// Without `finish` (an error ended the run): the sender stops at once.
    fn drop(&mut self) {
        if self.sender.is_some() {
            self.shared.lock().deadline = Some(Instant::now());
            self.shared.wake.notify_one();
        }
    }
}

/// Whether sending the same request again may succeed: no connection, a
/// timeout, or a receiver that says it is busy or broken for now.
fn retryable(e: &OtlpError) -> bool {
    match e {
        OtlpError::Io { .. } => true,
        OtlpError::Http { status, .. } => matches!(status, 408 | 429 | 500..=599),
        OtlpError::Endpoint { .. } => false,
    }
}

impl Sender {
    /// Sends batches until `finish` and the queue is empty, or the flush
    /// deadline passed.
    fn send_all(&self, shared: &Shared) {
        while let Some(batch) = self.next_batch(shared) {
            if !self.deliver(shared, batch) {
                return;
            }
        }
    }

    /// Up to `batch` rows, once that many are queued or [`LINGER`] passed
    /// since rows were first seen; `None` when finishing and nothing is left.
    fn next_batch(&self, shared: &Shared) -> Option<Vec<LogRecord>> {
        let mut s = shared.lock();
        let mut since: Option<Instant> = None;
        loop {
            let finishing = s.deadline.is_some();
            if finishing && (s.pending.is_empty() || s.deadline.is_some_and(|d| Instant::now() >= d)) {
                return None;
            }
            let lingered = since.is_some_and(|t| t.elapsed() >= LINGER);
            if s.pending.len() >= self.batch || (!s.pending.is_empty() && (lingered || finishing)) {
                let n = s.pending.len().min(self.batch);
                s.in_flight = n;
                return Some(s.pending.drain(..n).collect());
            }
            s = match since {
                Some(t) if !s.pending.is_empty() => {
                    shared.wake.wait_timeout(s, LINGER.saturating_sub(t.elapsed())).unwrap_or_else(|e| e.into_inner()).0
                }
                _ if !s.pending.is_empty() => {
                    since = Some(Instant::now());
                    s
                }
                _ => shared.wake.wait(s).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// POSTs `batch` until it is delivered or fails for good (true), or the
    /// flush deadline passes first (false: its rows stay counted in flight).
    fn deliver(&self, shared: &Shared, batch: Vec<LogRecord>) -> bool {
        let n = batch.len() as u64;
        let body = otlp_logs::request(&self.resource, batch, otlp::unix_now_ns()).encode_to_vec();
        let mut backoff = BACKOFF_FIRST;
        loop {
            let sent = otlp::post(&self.agent, &self.url, &body);
            let mut s = shared.lock();
            match sent {
                Ok(reply) => {
                    let rejected = otlp_logs::rejected(&reply, n);
                    s.books.delivered += n - rejected;
                    s.books.failed += rejected;
                }
                Err(e) if retryable(&e) => {
                    self.report(&mut s.books, &e, "ebq goes on, the rows wait in its queue");
                    // Woken early by new rows (waits on) or by `finish` (its deadline may come first).
                    let retry_at = Instant::now() + backoff;
                    loop {
                        let until = s.deadline.map_or(retry_at, |d| d.min(retry_at));
                        let Some(left) = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                            break;
                        };
                        s = shared.wake.wait_timeout(s, left).unwrap_or_else(|e| e.into_inner()).0;
                    }
                    if s.deadline.is_some_and(|d| Instant::now() >= d) {
                        return false;
                    }
                    s.books.retries += 1;
                    backoff = (backoff * 2).min(BACKOFF_MAX);
                    continue;
                }
                Err(e) => {
                    self.report(&mut s.books, &e, "its rows are counted failed");
                    s.books.failed += n;
                }
            }
            s.in_flight = 0;
            return true;
        }
    }

    /// Prints each kind of error once (the receiver's reason changes at
    /// every attempt; the kind does not).
    fn report(&self, books: &mut SinkBooks, e: &OtlpError, then: &str) {
        let kind = match e {
            OtlpError::Http { status, .. } => format!("HTTP {status}"),
            OtlpError::Io { source, .. } => format!("{:?}", source.kind()),
            OtlpError::Endpoint { .. } => "endpoint".to_string(),
        };
        if books.first_error(kind) {
            eprintln!("ebq: sink {}: {e}; {then}", self.name);
        }
    }
}
