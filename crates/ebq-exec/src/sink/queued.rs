//! A sink on its own thread behind a bounded queue, so encoding and writing
//! never run on the thread that drains the ring buffers.
//!
//! ```text
//! before: poll (drain rings, decode) → sink.write (encode, write) → poll …   one thread
//! after:  poll (drain rings, decode) → queue ─▶ writer thread: sink.write    two threads
//! ```
//!
//! Why: while the drain thread encoded JSON it did not read the rings, and a
//! burst (300,000 `pread64` rows in 0.1 s) overflowed them: 30–50 % dropped
//! with JSON or CSV, none with Parquet, whose encoding is cheaper (issue 35
//! item 6).
//!
//! The queue is bounded in bytes of Arrow memory ([`QueuedSink::DEFAULT_BYTES`]).
//! What happens when it is full is the caller's choice ([`WhenFull`]):
//! - [`WhenFull::Wait`] (one sink, `ebq`'s default): the drain waits for the
//!   writer — it does not drop: the kernel rings are the buffer of last
//!   resort, and what they lose is counted (`dropped`), so every row is
//!   written or accounted for;
//! - [`WhenFull::Drop`] (one of several sinks, [`super::FanOut`]): the batch
//!   is dropped for this sink only and its rows counted
//!   ([`QueuedSink::counts`]), so a slow sink never stalls the others or the rings.
//!
//! A batch is taken whole even when it alone exceeds the bound (it was decoded already).
//! A write error (a closed pipe) stops the writer; the next `write` or
//! `finish` returns it, with its kind kept (`BrokenPipe` stays `BrokenPipe`).

use super::Sink;
use crate::Output;
use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// A [`Sink`] that hands batches to another sink running on its own thread.
pub struct QueuedSink {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<io::Result<()>>>,
    when_full: WhenFull,
    /// The inner sink's delivery counts ([`Sink::delivery`]).
    delivery: Option<DeliveryProbe>,
}

/// What `write` does when the queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Wait for the writer to make room: lossless, but a slow sink holds the drain up.
    Wait,
    /// Drop the batch for this sink and count its rows.
    Drop,
}

/// Rows a queued sink wrote and dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    /// Rows the sink took (`Sink::write` returned Ok); for a sink with
    /// [`Delivery`], the rows it handed on for delivery (not those it refused).
    pub written: u64,
    /// Rows dropped because the queue was full ([`WhenFull::Drop`]), and rows
    /// the sink itself refused because its own queue was full ([`Delivery::refused`]).
    pub dropped: u64,
    /// What became of the written rows, for a sink that ships to a broker.
    pub delivery: Option<Delivery>,
}

/// What became of the rows a broker sink (Kafka, OTLP) took, counted by its
/// delivery reports. `written = delivered + failed + queued` once the sink
/// finished (a flush with a bounded timeout); before, some rows are on their way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Rows the broker acknowledged.
    pub delivered: u64,
    /// Rows whose delivery failed for good (a message timeout, a refused topic).
    pub failed: u64,
    /// Rows still in the client's queue: while running, on their way; after
    /// `finish`, the rows the flush did not get out before its timeout (lost).
    pub queued: u64,
    /// Rows the sink refused because the client's own queue was full (the
    /// broker is down or slow): counted in [`QueueCounts::dropped`].
    pub refused: u64,
    /// Requests sent again after a failure (the OTLP sink; librdkafka
    /// retries inside, uncounted: 0 for Kafka).
    pub retries: u64,
}

/// Reads a sink's [`Delivery`] counts from any thread.
pub type DeliveryProbe = Arc<dyn Fn() -> Delivery + Send + Sync>;

struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch is queued or the queue is closed.
    queued: Condvar,
    /// Signalled when the writer took a batch or stopped.
    taken: Condvar,
    bound: usize,
}

#[derive(Default)]
struct State {
    batches: VecDeque<(Output, usize)>,
    bytes: usize,
    closed: bool,
    /// The writer stopped on this error (its kind and message).
    failed: Option<(io::ErrorKind, String)>,
    /// Times a `write` waited for room.
    waits: u64,
    counts: QueueCounts,
}

impl QueuedSink {
    /// The default bound: 64 MiB of Arrow memory (about 2 million rows of
    /// four 8-byte columns), beyond what the rings themselves hold.
    pub const DEFAULT_BYTES: usize = 64 << 20;

    /// Starts a thread writing to `inner`; the queue holds up to `bound`
    /// bytes of batches.
    pub fn spawn(inner: Box<dyn Sink + Send>, bound: usize) -> io::Result<QueuedSink> {
        QueuedSink::spawn_with(inner, bound, WhenFull::Wait)
    }

    /// As [`QueuedSink::spawn`], with `when_full` deciding what a full queue does.
    pub fn spawn_with(inner: Box<dyn Sink + Send>, bound: usize, when_full: WhenFull) -> io::Result<QueuedSink> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            queued: Condvar::new(),
            taken: Condvar::new(),
            bound: bound.max(1),
        });
        let theirs = shared.clone();
        let delivery = inner.delivery();
        let writer = std::thread::Builder::new().name("ebq-writer".into()).spawn(move || write_all(&theirs, inner))?;
        Ok(QueuedSink { shared, writer: Some(writer), when_full, delivery })
    }

    /// Rows written and dropped so far (final after `finish`); with the
    /// inner sink's delivery counts, the rows it refused move from written
    /// to dropped.
    pub fn counts(&self) -> QueueCounts {
        let mut c = self.shared.lock().counts;
        if let Some(probe) = &self.delivery {
            let d = probe();
            c.written = c.written.saturating_sub(d.refused);
            c.dropped += d.refused;
            c.delivery = Some(d);
        }
        c
    }

    /// How many times a `write` waited for the writer to make room.
    pub fn waits(&self) -> u64 {
        self.shared.lock().waits
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn error((kind, msg): &(io::ErrorKind, String)) -> io::Error {
    io::Error::new(*kind, msg.clone())
}

/// The writer thread: writes batches in order until the queue is closed and
/// empty, then finishes the sink.
fn write_all(shared: &Shared, mut inner: Box<dyn Sink + Send>) -> io::Result<()> {
    loop {
        let mut state = shared.lock();
        while state.batches.is_empty() && !state.closed {
            state = shared.queued.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        let Some((out, bytes)) = state.batches.pop_front() else {
            break;
        };
        state.bytes -= bytes;
        drop(state);
        shared.taken.notify_all();
        let rows = out.batch.num_rows() as u64;
        let written = inner.write(&out);
        if written.is_ok() {
            shared.lock().counts.written += rows;
        }
        if let Err(e) = written {
            let mut state = shared.lock();
            state.failed = Some((e.kind(), e.to_string()));
            state.batches.clear();
            state.bytes = 0;
            drop(state);
            shared.taken.notify_all();
            return Err(e);
        }
    }
    let r = inner.finish();
    if let Err(e) = &r {
        shared.lock().failed = Some((e.kind(), e.to_string()));
    }
    r
}

impl Sink for QueuedSink {
    fn write(&mut self, out: &Output) -> io::Result<()> {
        let bytes = out.batch.get_array_memory_size().max(1);
        let mut state = self.shared.lock();
        let full = !state.batches.is_empty() && state.bytes + bytes > self.shared.bound;
        if full && state.failed.is_none() && self.when_full == WhenFull::Drop {
            state.counts.dropped += out.batch.num_rows() as u64;
            return Ok(());
        }
        if full && state.failed.is_none() {
            state.waits += 1;
            while !state.batches.is_empty() && state.bytes + bytes > self.shared.bound && state.failed.is_none() {
                state = self.shared.taken.wait(state).unwrap_or_else(|e| e.into_inner());
            }
        }
        if let Some(f) = &state.failed {
            return Err(error(f));
        }
        state.batches.push_back((out.clone(), bytes));
        state.bytes += bytes;
        drop(state);
        self.shared.queued.notify_one();
        Ok(())
    }

    /// Waits until every queued batch is written and the sink finished.
    fn finish(&mut self) -> io::Result<()> {
        self.shared.lock().closed = true;
        self.shared.queued.notify_one();
        match self.writer.take() {
            Some(w) => w.join().unwrap_or_else(|_| Err(io::Error::other("the writer thread panicked"))),
            None => self.shared.lock().failed.as_ref().map_or(Ok(()), |f| Err(error(f))),
        }
    }
}

impl Drop for QueuedSink {
    /// Without `finish` (an error ended the run): the writer stops after the
    /// queued batches, unfinished, and is not waited for.
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.shared.lock().closed = true;
            self.shared.queued.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WindowBounds;
    use arrow_array::{RecordBatch, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn output(first: u64, n: u64) -> Output {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt64, false)]));
        let col = Arc::new(UInt64Array::from_iter_values(first..first + n));
        let batch = RecordBatch::try_new(schema, vec![col]).unwrap();
        Output { window: WindowBounds::Rows, batch, partial: false, extras: vec![] }
    }

    /// Collects the values; sleeps on every write (a slow terminal); fails from
    /// the `fail_at`-th write on.
    struct Slow {
        seen: Arc<Mutex<Vec<u64>>>,
        writes: Arc<AtomicUsize>,
        fail_at: usize,
        finished: Arc<AtomicUsize>,
    }

    impl Sink for Slow {
        fn write(&mut self, out: &Output) -> io::Result<()> {
            if self.writes.fetch_add(1, Ordering::SeqCst) + 1 >= self.fail_at {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            std::thread::sleep(Duration::from_millis(2));
            let col = out.batch.column(0).as_any().downcast_ref::<UInt64Array>().unwrap();
            self.seen.lock().unwrap().extend(col.values().iter().copied());
            Ok(())
        }

        fn finish(&mut self) -> io::Result<()> {
            self.finished.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn slow(fail_at: usize) -> (Slow, Arc<Mutex<Vec<u64>>>, Arc<AtomicUsize>) {
        let seen = Arc::new(Mutex::new(vec![]));
        let finished = Arc::new(AtomicUsize::new(0));
        let s = Slow { seen: seen.clone(), writes: Arc::new(AtomicUsize::new(0)), fail_at, finished: finished.clone() };
        (s, seen, finished)
    }

    #[test]
    fn a_full_queue_makes_the_producer_wait_and_loses_nothing() {
        let (inner, seen, finished) = slow(usize::MAX);
        let one = output(0, 100).batch.get_array_memory_size();
        // Room for two batches: the producer outruns the 2 ms writes and waits.
        let mut q = QueuedSink::spawn(Box::new(inner), 2 * one).unwrap();
        for i in 0..50 {
            q.write(&output(i * 100, 100)).unwrap();
        }
        assert!(q.waits() > 0, "the producer never waited");
        q.finish().unwrap();
        assert_eq!(*seen.lock().unwrap(), (0..5000).collect::<Vec<u64>>(), "every row, in order");
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_full_dropping_queue_drops_whole_batches_and_counts_their_rows() {
        let (inner, seen, _) = slow(usize::MAX);
        let one = output(0, 100).batch.get_array_memory_size();
        let mut q = QueuedSink::spawn_with(Box::new(inner), 2 * one, WhenFull::Drop).unwrap();
        for i in 0..50 {
            q.write(&output(i * 100, 100)).unwrap();
        }
        assert_eq!(q.waits(), 0, "a dropping queue never waits");
        q.finish().unwrap();
        let seen = seen.lock().unwrap();
        let c = q.counts();
        assert!(c.dropped > 0, "50 batches outran 2 ms writes into room for two: {c:?}");
        assert_eq!((c.written, c.written + c.dropped), (seen.len() as u64, 5000), "{c:?}");
        assert!(seen.chunks(100).all(|b| b[0] % 100 == 0 && b.windows(2).all(|w| w[1] == w[0] + 1)), "whole batches");
    }

    #[test]
    fn a_batch_larger_than_the_bound_still_goes_through() {
        let (inner, seen, _) = slow(usize::MAX);
        let mut q = QueuedSink::spawn(Box::new(inner), 1).unwrap();
        q.write(&output(0, 10_000)).unwrap();
        q.write(&output(10_000, 10_000)).unwrap();
        q.finish().unwrap();
        assert_eq!(seen.lock().unwrap().len(), 20_000);
    }

    #[test]
    fn a_write_error_reaches_the_producer_with_its_kind() {
        let (inner, _, finished) = slow(3);
        let mut q = QueuedSink::spawn(Box::new(inner), 1).unwrap();
        let mut err = None;
        for i in 0..100 {
            if let Err(e) = q.write(&output(i, 1)) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err.expect("the error comes back").kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(q.finish().unwrap_err().kind(), io::ErrorKind::BrokenPipe);
        assert_eq!(finished.load(Ordering::SeqCst), 0, "a failed sink is not finished");
    }
}
