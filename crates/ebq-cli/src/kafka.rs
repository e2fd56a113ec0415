//! `--sink kafka://HOST:PORT/TOPIC`: rows to a Kafka topic through librdkafka
//! (the system's, `librdkafka-dev`; cargo feature `kafka`, on by default).
//!
//! Each message is one row as a JSON object (the JSON sink's keys: window
//! columns, then the query's; a histogram is a message per bucket row), or
//! with `--kafka-format arrow` one batch as an Arrow IPC stream (schema,
//! batch, end of stream: each message decodes alone). Every message's key is
//! the host name, so one topic can take the rows of many machines.
//!
//! The producer is idempotent with `acks=all`: a retry after a lost
//! acknowledgement does not duplicate a row. A produce goes to librdkafka's
//! queue, whose bound (`queue.buffering.max.messages`, `--kafka-queue`,
//! default [`crate::sink_spec::KAFKA_QUEUE_DEFAULT`]) is what holds the rows
//! while the broker is down. When it is full the sink's writer thread waits
//! for room, up to [`FULL_WAIT`]: a burst outruns the producer (200,000 JSON
//! rows of `dd bs=1` in 0.15 s, a message each, filled the default queue and
//! 60,472 were refused while the broker was up) but the broker soon takes it.
//! A queue still full after that wait (the broker down or slower than the
//! rows) refuses the row, counted dropped, and the sink stops waiting until
//! the queue takes a message again, so a broker that is gone costs one wait,
//! not one per row. In front of the writer thread is ebq's own bounded queue,
//! which drops when full ([`ebq::sink::FanOut`]; a Kafka sink's does even
//! when it is the only sink), so the rings and the other sinks never wait
//! for Kafka.
//!
//! Delivery reports count what became of each row ([`Delivery`]): delivered
//! (acknowledged by the broker), failed (librdkafka gave up: a message older
//! than `message.timeout.ms`, 300 s, or a refused topic) and, at exit,
//! queued: rows still in librdkafka's queue after a flush of at most
//! [`FLUSH_TIMEOUT`], lost when ebq exits.

use crate::sink_books::SinkBooks;
use crate::sink_spec::{KafkaFormat, KafkaSpec};
use ebq::sink::{ipc_stream, DeliveryProbe, JsonSink, Sink};
use ebq::Output;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use rdkafka::ClientContext;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// librdkafka's `linger.ms`: how long a message waits for others to share its request.
pub const LINGER_MS: u32 = 50;

/// How long `finish` waits for the broker to acknowledge what is queued.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a message waits for room in librdkafka's full queue before it is
/// refused (see the module's note).
pub const FULL_WAIT: Duration = Duration::from_secs(1);

/// The pause between two tries at a full queue: the producer's poll thread
/// frees room as delivery reports come in.
const FULL_RETRY: Duration = Duration::from_millis(1);

/// The producer's context: counts delivery reports (each message's opaque is
/// the number of rows it carries) and prints librdkafka's errors.
struct Counting {
    books: Arc<Mutex<SinkBooks>>,
    name: String,
}

fn lock(books: &Mutex<SinkBooks>) -> MutexGuard<'_, SinkBooks> {
    books.lock().unwrap_or_else(|e| e.into_inner())
}

impl ClientContext for Counting {
    // librdkafka's log lines go to the `log` crate, which ebq does not print.
    fn log(&self, _: rdkafka::config::RDKafkaLogLevel, _: &str, _: &str) {}

    /// A broker that cannot be reached: each kind of error said once, not
    /// at every reconnect attempt (the reason's text changes every time).
    fn error(&self, error: KafkaError, reason: &str) {
        let mut b = lock(&self.books);
        let kind = error.to_string();
        if b.closed.is_none() && b.first_error(kind.clone()) {
            eprintln!("ebq: sink {}: {reason} ({kind}); ebq goes on, the rows wait in the queue", self.name);
        }
    }
}

impl ProducerContext for Counting {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, rows: usize) {
        let mut b = lock(&self.books);
        if b.closed.is_some() {
            return;
        }
        match result {
            Ok(_) => b.delivered += rows as u64,
            Err(_) => b.failed += rows as u64,
        }
    }
}

/// librdkafka's handle of the sink's topic, taken when the sink is created
/// and released before the producer (a field declared before it).
///
/// Why: `rd_kafka_producev` with a topic name librdkafka has not seen makes
/// the topic without asking for its leader; its messages then wait in the
/// unassigned queue for the once-a-second topic scan (`rd_kafka_topic_scan_all`).
/// A run shorter than that sent nothing until `flush`, and then produced the
/// whole backlog in a burst, its broker thread spinning on `poll(2)` with a
/// zero timeout while each request waited for its acknowledgement (an
/// idempotent producer keeps at most 5 *messages* in flight per partition).
/// `rd_kafka_topic_new` asks for the leader at once (asynchronously: nothing
/// waits for the broker here). Measured with a C producer sending 140
/// messages of 40 KB in 400 ms (issue 38): without the handle flush took
/// 549–600 ms and 33–57 ms of CPU, with it 4–28 ms and 16–20 ms.
struct TopicHandle(*mut rdkafka::bindings::rd_kafka_topic_t);

// SAFETY: librdkafka's topic handles may be used and destroyed from any thread.
unsafe impl Send for TopicHandle {}

impl TopicHandle {
    fn new(producer: &ThreadedProducer<Counting>, topic: &str) -> Result<TopicHandle, String> {
        let name = std::ffi::CString::new(topic).map_err(|_| format!("topic `{topic}` holds a NUL"))?;
        // SAFETY: the client pointer is live (the producer outlives the handle,
        // see KafkaSink's field order); a null configuration takes the defaults.
        let t = unsafe {
            rdkafka::bindings::rd_kafka_topic_new(producer.client().native_ptr(), name.as_ptr(), std::ptr::null_mut())
        };
        if t.is_null() {
            return Err(format!("librdkafka refused topic `{topic}`"));
        }
        Ok(TopicHandle(t))
    }
}

impl Drop for TopicHandle {
    fn drop(&mut self) {
        // SAFETY: our handle from rd_kafka_topic_new, destroyed once, before the client.
        unsafe { rdkafka::bindings::rd_kafka_topic_destroy(self.0) }
    }
}

/// A Kafka topic as a [`Sink`].
pub struct KafkaSink {
    /// Declared before `producer`: dropped first.
    _topic: TopicHandle,
    producer: ThreadedProducer<Counting>,
    topic: String,
    key: String,
    format: KafkaFormat,
    books: Arc<Mutex<SinkBooks>>,
    /// Reused buffer: a batch's JSON lines or its Arrow IPC stream.
    buf: Vec<u8>,
    /// The queue stayed full for a whole [`FULL_WAIT`]: refuse at once until it takes a message.
    stalled: std::cell::Cell<bool>,
}

impl KafkaSink {
    /// A producer for `spec` (called `name` in messages), its format and queue
    /// bound from the spec or else `format` and `queue`; rows keyed by `host`.
    /// Nothing is sent yet: librdkafka connects in the background.
    pub fn create(
        name: &str,
        spec: &KafkaSpec,
        format: KafkaFormat,
        queue: u32,
        host: String,
    ) -> Result<KafkaSink, String> {
        let books = Arc::new(Mutex::new(SinkBooks::default()));
        let queue = spec.queue.unwrap_or(queue);
        let producer = ClientConfig::new()
            .set("bootstrap.servers", &spec.brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("queue.buffering.max.messages", queue.to_string())
            // At librdkafka's default 5 ms its broker thread at times spun on
            // poll(2) (perf: most of ebq's CPU with Kafka arrow): a C producer
            // with these settings, 25 batches of 230 KB against a local broker
            // on a busy machine, took 0.9 s of CPU in 2 of 6 runs, and
            // 0.013–0.015 s in each of 6 at 50 ms (issue 38). ebq's batches
            // come up to 50 ms apart (the ring's poll) anyway.
            .set("linger.ms", LINGER_MS.to_string())
            .set("client.id", "ebq")
            .create_with_context(Counting { books: books.clone(), name: name.to_string() })
            .map_err(|e| format!("error: --sink `{name}`: cannot create the Kafka producer: {e}"))?;
        let topic = TopicHandle::new(&producer, &spec.topic).map_err(|e| format!("error: --sink `{name}`: {e}"))?;
        Ok(KafkaSink {
            _topic: topic,
            producer,
            topic: spec.topic.clone(),
            key: host,
            format: spec.format.unwrap_or(format),
            books,
            buf: vec![],
            stalled: std::cell::Cell::new(false),
        })
    }

    /// Hands one message carrying `rows` rows to librdkafka. A full queue is
    /// waited on up to [`FULL_WAIT`] (not while stalled), then refuses it
    /// (counted dropped); another error fails it (counted failed).
    fn send(&self, payload: &[u8], rows: usize) {
        let rows64 = rows as u64;
        // Taken before the send: its delivery report may come (on librdkafka's
        // poll thread) before `send` returns here.
        lock(&self.books).taken += rows64;
        let mut record = BaseRecord::with_opaque_to(&self.topic, rows).key(self.key.as_bytes()).payload(payload);
        let mut waited = Duration::ZERO;
        loop {
            match self.producer.send(record) {
                Ok(()) => return self.stalled.set(false),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back))
                    if waited < FULL_WAIT && !self.stalled.get() =>
                {
                    std::thread::sleep(FULL_RETRY);
                    waited += FULL_RETRY;
                    record = back;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    self.stalled.set(true);
                    let mut b = lock(&self.books);
                    b.taken -= rows64;
                    b.refused += rows64;
                    return;
                }
                Err(_) => return lock(&self.books).failed += rows64,
            }
        }
    }

    /// `o` as JSON lines, one message each. A histogram row is several lines
    /// (one per bucket): its row is counted with its last line.
    fn send_json(&mut self, o: &Output) -> io::Result<()> {
        let rows = o.batch.num_rows();
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        JsonSink::new(&mut buf).write(o)?;
        if buf.iter().filter(|&&b| b == b'\n').count() == rows {
            for line in buf.split(|&b| b == b'\n').take(rows) {
                self.send(line, 1);
            }
        } else {
            for i in 0..rows {
                buf.clear();
                let one = Output { batch: o.batch.slice(i, 1), ..o.clone() };
                JsonSink::new(&mut buf).write(&one)?;
                let lines: Vec<&[u8]> = buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
                for (n, line) in lines.iter().enumerate() {
                    self.send(line, usize::from(n + 1 == lines.len()));
                }
            }
        }
        self.buf = buf;
        Ok(())
    }

    /// `o` (with its window columns) as one Arrow IPC stream.
    fn send_arrow(&mut self, o: &Output) -> io::Result<()> {
        let mut buf = std::mem::take(&mut self.buf);
        let sent = ipc_stream(o, &mut buf).map(|()| self.send(&buf, o.batch.num_rows()));
        self.buf = buf;
        sent
    }
}

impl Sink for KafkaSink {
    fn write(&mut self, o: &Output) -> io::Result<()> {
        if o.batch.num_rows() == 0 {
            return Ok(());
        }
        match self.format {
            KafkaFormat::Json => self.send_json(o),
            KafkaFormat::Arrow => self.send_arrow(o),
        }
    }

    /// Waits up to [`FLUSH_TIMEOUT`] for the queued messages' reports; what
    /// is still queued then is counted `queued` (lost at exit), not failed.
    fn finish(&mut self) -> io::Result<()> {
        // A timeout is not an error of the run: its rows are counted.
        let _ = self.producer.flush(FLUSH_TIMEOUT);
        let mut b = lock(&self.books);
        b.closed = Some(b.in_flight());
        Ok(())
    }

    fn delivery(&self) -> Option<DeliveryProbe> {
        let books = self.books.clone();
        Some(Arc::new(move || lock(&books).delivery()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebq::sink::Delivery;
    use ebq::WindowBounds;
    use std::sync::Arc;

    fn rows(n: u64) -> Output {
        use arrow_array::{RecordBatch, UInt64Array};
        use arrow_schema::{DataType, Field, Schema};
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt64, false)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::new(UInt64Array::from_iter_values(0..n))]).unwrap();
        Output { window: WindowBounds::Rows, batch, partial: false, extras: vec![] }
    }

    /// No broker listens on port 1: every message stays in librdkafka's
    /// queue, and beyond its bound a message is refused and counted (after
    /// one wait of [`FULL_WAIT`]: the sink is stalled from then on).
    fn unreachable(format: KafkaFormat, queue: u32) -> KafkaSink {
        let spec = KafkaSpec { brokers: "127.0.0.1:1".into(), topic: "t".into(), format: None, queue: None };
        KafkaSink::create("kafka://127.0.0.1:1/t", &spec, format, queue, "host".into()).unwrap()
    }

    #[test]
    fn beyond_the_client_queue_rows_are_refused_and_counted() {
        let mut json = unreachable(KafkaFormat::Json, 3);
        let t = std::time::Instant::now();
        json.write(&rows(5)).unwrap();
        let waited = t.elapsed();
        let probe = json.delivery().unwrap();
        assert_eq!(probe(), Delivery { delivered: 0, failed: 0, queued: 3, refused: 2, retries: 0 });
        // One wait for the fourth row; the fifth is refused at once.
        assert!(waited >= FULL_WAIT && waited < 2 * FULL_WAIT, "{waited:?}");
        assert!(json.stalled.get());
        // Arrow: a message is a batch, its rows counted together.
        let mut arrow = unreachable(KafkaFormat::Arrow, 1);
        arrow.write(&rows(5)).unwrap();
        arrow.write(&rows(4)).unwrap();
        assert_eq!(
            arrow.delivery().unwrap()(),
            Delivery { delivered: 0, failed: 0, queued: 5, refused: 4, retries: 0 }
        );
    }
}
