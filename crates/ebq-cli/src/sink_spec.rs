//! `--sink SPEC`: where one of a query's outputs goes.
//!
//! - `-`: the terminal (stdout), in `--format` table, json or csv;
//! - a file path: the format from its extension (`.json`/`.jsonl`, `.csv`,
//!   `.parquet`, `.arrow`);
//! - `kafka://HOST:PORT/TOPIC`: a Kafka topic (one message per row, keyed by
//!   the host name), with optional parameters `?format=json|arrow&queue=N`
//!   (they override `--kafka-format` and `--kafka-queue`); a comma-separated
//!   list of brokers is the bootstrap list; without `:PORT`, 9092;
//! - `otlp+http://HOST:PORT[/PATH]`: OTLP log records (one a row) POSTed to
//!   `http://HOST:PORT[/PATH]/v1/logs`, with optional parameters
//!   `?queue=N&batch=N` (rows the sink keeps for the receiver, rows a request).
//!
//! Pure: a spec is parsed before anything is created or loaded.

use ebq::sink::FileFormat;
use std::path::PathBuf;

/// One parsed `--sink`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkSpec {
    /// stdout, in `--format`.
    Terminal,
    /// A file in the format its extension names.
    File { path: PathBuf, format: FileFormat },
    /// A Kafka topic.
    Kafka(KafkaSpec),
    /// An OTLP/HTTP logs receiver.
    Otlp(OtlpSpec),
}

/// `otlp+http://HOST:PORT[/PATH][?queue=N&batch=N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpSpec {
    /// `http://HOST:PORT[/PATH]`: the records go to its `/v1/logs`.
    pub endpoint: String,
    /// Rows the sink keeps while the receiver is down or slow; beyond, rows
    /// are refused and counted dropped.
    pub queue: usize,
    /// Rows in one request, at most.
    pub batch: usize,
}

/// The default of `queue=`: rows kept for an OTLP receiver (as Kafka's queue).
pub const OTLP_QUEUE_DEFAULT: usize = 100_000;
/// The default of `batch=`: rows a request, at most (a few tens of KiB).
pub const OTLP_BATCH_DEFAULT: usize = 512;
/// The largest `queue=` and `batch=`.
pub const OTLP_ROWS_MAX: usize = 10_000_000;

/// `kafka://BROKERS/TOPIC[?format=json|arrow&queue=N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
// Without the `kafka` feature a spec is parsed (and refused), never read.
#[cfg_attr(not(feature = "kafka"), allow(dead_code))]
pub struct KafkaSpec {
    /// librdkafka's `bootstrap.servers`: `host:port[,host:port…]`.
    pub brokers: String,
    /// The topic every row goes to.
    pub topic: String,
    /// `format=`, when given (else `--kafka-format`).
    pub format: Option<KafkaFormat>,
    /// `queue=`, when given (else `--kafka-queue`): librdkafka's
    /// `queue.buffering.max.messages`.
    pub queue: Option<u32>,
}

/// What one Kafka message holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KafkaFormat {
    /// One row as a JSON object (the keys of the JSON sink).
    Json,
    /// One batch as an Arrow IPC stream (schema, batch, end of stream).
    Arrow,
}

/// The default bound of librdkafka's queue (`queue.buffering.max.messages`):
/// messages waiting for the broker (while it is down) beyond it are refused
/// and counted dropped. librdkafka's own default.
pub const KAFKA_QUEUE_DEFAULT: u32 = 100_000;
/// The largest `queue.buffering.max.messages` librdkafka 2.0 accepts.
pub const KAFKA_QUEUE_MAX: u32 = 10_000_000;

impl KafkaSpec {
    /// Parses what follows `kafka://` in `spec`.
    fn parse(rest: &str) -> Result<KafkaSpec, String> {
        // Positions are 1-based characters of the whole spec (after the 8 of `kafka://`).
        let at = |i: usize| i + "kafka://".len() + 1;
        let (brokers, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some((i, &rest[i + 1..]))),
            None => (rest, None),
        };
        if brokers.is_empty() {
            return Err(format!("no broker at character {}; a Kafka sink is kafka://HOST:PORT/TOPIC", at(0)));
        }
        check_brokers(brokers, at)?;
        let Some((slash, path)) = path else {
            return Err(format!(
                "no topic: a Kafka sink is kafka://HOST:PORT/TOPIC; add `/TOPIC` at character {}",
                at(rest.len())
            ));
        };
        let (topic, params) = match path.split_once('?') {
            Some((t, p)) => (t, Some(p)),
            None => (path, None),
        };
        let topic_at = at(slash + 1);
        if topic.is_empty() {
            return Err(format!("no topic at character {topic_at}; a Kafka sink is kafka://HOST:PORT/TOPIC"));
        }
        if let Some((i, c)) = topic.char_indices().find(|&(_, c)| !(c.is_ascii_alphanumeric() || "._-".contains(c))) {
            return Err(format!(
                "`{c}` at character {} cannot be in a topic name (letters, digits, `.`, `_` and `-`)",
                topic_at + i
            ));
        }
        if topic.len() > 249 || topic == "." || topic == ".." {
            return Err(format!("`{topic}` is not a topic name (at most 249 characters, not `.` or `..`)"));
        }
        let mut spec = KafkaSpec { brokers: brokers.to_string(), topic: topic.to_string(), format: None, queue: None };
        spec.parse_params(params, topic_at + topic.len() + 1)?;
        Ok(spec)
    }

    /// The `?format=…&queue=…` parameters (`params` without the `?`, starting at character `param_at`).
    fn parse_params(&mut self, params: Option<&str>, mut param_at: usize) -> Result<(), String> {
        for param in params.into_iter().flat_map(|p| p.split('&')) {
            match param.split_once('=') {
                Some(("format", "json")) => self.format = Some(KafkaFormat::Json),
                Some(("format", "arrow")) => self.format = Some(KafkaFormat::Arrow),
                Some(("format", other)) => {
                    return Err(format!("format `{other}` at character {param_at}: a Kafka sink's format is json or arrow"))
                }
                Some(("queue", n)) => match n.parse::<u32>() {
                    Ok(n @ 1..=KAFKA_QUEUE_MAX) => self.queue = Some(n),
                    _ => {
                        return Err(format!(
                            "queue `{n}` at character {param_at}: the queue is a number of messages from 1 to {KAFKA_QUEUE_MAX}"
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "unknown parameter `{param}` at character {param_at}; a Kafka sink takes format=json|arrow and queue=N"
                    ))
                }
            }
            param_at += param.len() + 1;
        }
        Ok(())
    }
}

/// Each broker of a Kafka sink's comma-separated list is `HOST[:PORT]` with a
/// host and a port in 1..=65535 (`at` turns a position in `brokers` into the spec's character).
fn check_brokers(brokers: &str, at: impl Fn(usize) -> usize) -> Result<(), String> {
    let mut offset = 0;
    for broker in brokers.split(',') {
        let (host, port) = match broker.rsplit_once(':') {
            Some((h, p)) => (h, Some((h.len() + 1, p))),
            None => (broker, None),
        };
        if host.is_empty() {
            return Err(format!(
                "empty broker host at character {}; a Kafka sink is kafka://HOST:PORT/TOPIC",
                at(offset)
            ));
        }
        if let Some((i, p)) = port {
            if p.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(format!(
                    "`{p}` at character {} is not a port (1 to 65535); a Kafka sink is kafka://HOST:PORT/TOPIC",
                    at(offset + i)
                ));
            }
        }
        offset += broker.len() + 1;
    }
    Ok(())
}

impl OtlpSpec {
    /// Parses what follows `otlp+http://` in `spec`.
    fn parse(rest: &str) -> Result<OtlpSpec, String> {
        const SHAPE: &str = "an OTLP sink is otlp+http://HOST:PORT";
        // Positions are 1-based characters of the whole spec.
        let at = |i: usize| i + "otlp+http://".len() + 1;
        let (url, params) = match rest.split_once('?') {
            Some((u, p)) => (u, Some(p)),
            None => (rest, None),
        };
        let authority = url.split('/').next().unwrap_or_default();
        if authority.is_empty() {
            return Err(format!("no host at character {}; {SHAPE}", at(0)));
        }
        if let Some((host, port)) = authority.rsplit_once(':') {
            if host.is_empty() {
                return Err(format!("no host at character {}; {SHAPE}", at(0)));
            }
            if port.parse::<u16>().map_or(true, |p| p == 0) {
                return Err(format!(
                    "`{port}` at character {} is not a port (1 to 65535); {SHAPE}",
                    at(host.len() + 1)
                ));
            }
        }
        let mut spec =
            OtlpSpec { endpoint: format!("http://{url}"), queue: OTLP_QUEUE_DEFAULT, batch: OTLP_BATCH_DEFAULT };
        let mut param_at = at(url.len() + 1);
        for param in params.into_iter().flat_map(|p| p.split('&')) {
            let rows = |n: &str| n.parse::<usize>().ok().filter(|n| (1..=OTLP_ROWS_MAX).contains(n));
            match param.split_once('=') {
                Some((key @ ("queue" | "batch"), n)) => match rows(n) {
                    Some(n) if key == "queue" => spec.queue = n,
                    Some(n) => spec.batch = n,
                    None => {
                        return Err(format!(
                            "{key} `{n}` at character {param_at}: a number of rows from 1 to {OTLP_ROWS_MAX}"
                        ))
                    }
                },
                _ => {
                    return Err(format!(
                        "unknown parameter `{param}` at character {param_at}; an OTLP sink takes queue=N and batch=N"
                    ))
                }
            }
            param_at += param.len() + 1;
        }
        Ok(spec)
    }
}

impl SinkSpec {
    /// Parses `spec`; the error says what is wrong with it (the caller names
    /// the spec and where it was given: `--sink`, or a query's `sinks`).
    pub fn parse(spec: &str) -> Result<SinkSpec, String> {
        if spec == "-" {
            return Ok(SinkSpec::Terminal);
        }
        if spec.trim().is_empty() {
            return Err("empty; give `-` for the terminal or a file path such as rows.parquet".into());
        }
        if let Some(rest) = spec.strip_prefix("kafka://") {
            return KafkaSpec::parse(rest).map(SinkSpec::Kafka);
        }
        if let Some(rest) = spec.strip_prefix("otlp+http://") {
            return OtlpSpec::parse(rest).map(SinkSpec::Otlp);
        }
        if let Some((scheme, _)) = spec.split_once("://") {
            return Err(match scheme {
                "otlp" | "otlp+grpc" | "otlp+https" => format!(
                    "`{scheme}://` is not supported: ebq sends OTLP over plain HTTP, otlp+http://HOST:PORT \
                     (put a local collector or a TLS proxy in front)"
                ),
                _ => format!("unknown scheme `{scheme}://`; a sink is `-`, a file path, otlp+http:// or kafka://"),
            });
        }
        let path = PathBuf::from(spec);
        let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        let format = match ext.as_deref() {
            Some("json" | "jsonl" | "ndjson") => FileFormat::Json,
            Some("csv") => FileFormat::Csv,
            Some("parquet") => FileFormat::Parquet,
            Some("arrow" | "arrows" | "ipc") => FileFormat::Arrow,
            Some(other) => {
                return Err(format!(
                    "cannot tell the format from `.{other}`; name the file .jsonl, .json, .csv, .parquet or .arrow"
                ))
            }
            None => {
                return Err(
                    "a file sink needs an extension that names its format: .jsonl, .json, .csv, .parquet or .arrow"
                        .into(),
                )
            }
        };
        Ok(SinkSpec::File { path, format })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_bad_ones_say_what_is_wrong() {
        assert_eq!(SinkSpec::parse("-"), Ok(SinkSpec::Terminal));
        let file = |p: &str, format| Ok(SinkSpec::File { path: p.into(), format });
        assert_eq!(SinkSpec::parse("out/rows.JSONL"), file("out/rows.JSONL", FileFormat::Json));
        assert_eq!(SinkSpec::parse("r.json"), file("r.json", FileFormat::Json));
        assert_eq!(SinkSpec::parse("r.csv"), file("r.csv", FileFormat::Csv));
        assert_eq!(SinkSpec::parse("/tmp/r.parquet"), file("/tmp/r.parquet", FileFormat::Parquet));
        assert_eq!(SinkSpec::parse("r.arrow"), file("r.arrow", FileFormat::Arrow));
        assert_eq!(
            SinkSpec::parse("rows.txt").unwrap_err(),
            "cannot tell the format from `.txt`; name the file .jsonl, .json, .csv, .parquet or .arrow"
        );
        assert!(SinkSpec::parse("rows").unwrap_err().starts_with("a file sink needs an extension"));
        assert!(SinkSpec::parse("").unwrap_err().starts_with("empty"));
        let kafka = |brokers: &str, topic: &str, format, queue| {
            Ok(SinkSpec::Kafka(KafkaSpec { brokers: brokers.into(), topic: topic.into(), format, queue }))
        };
        assert_eq!(SinkSpec::parse("kafka://127.0.0.1:9092/rows"), kafka("127.0.0.1:9092", "rows", None, None));
        assert_eq!(SinkSpec::parse("kafka://a:1,b/t.x_y-z"), kafka("a:1,b", "t.x_y-z", None, None));
        assert_eq!(
            SinkSpec::parse("kafka://k:9092/rows?format=arrow&queue=10"),
            kafka("k:9092", "rows", Some(KafkaFormat::Arrow), Some(10))
        );
        let bad = |spec: &str| SinkSpec::parse(spec).unwrap_err();
        assert_eq!(
            bad("kafka://host"),
            "no topic: a Kafka sink is kafka://HOST:PORT/TOPIC; add `/TOPIC` at character 13"
        );
        assert_eq!(bad("kafka://host:9092/"), "no topic at character 19; a Kafka sink is kafka://HOST:PORT/TOPIC");
        assert_eq!(bad("kafka:///t"), "no broker at character 9; a Kafka sink is kafka://HOST:PORT/TOPIC");
        assert_eq!(
            bad("kafka://host:99999/t"),
            "`99999` at character 14 is not a port (1 to 65535); a Kafka sink is kafka://HOST:PORT/TOPIC"
        );
        assert_eq!(
            bad("kafka://h/a/b"),
            "`/` at character 12 cannot be in a topic name (letters, digits, `.`, `_` and `-`)"
        );
        assert_eq!(
            bad("kafka://h/t?format=csv"),
            "format `csv` at character 13: a Kafka sink's format is json or arrow"
        );
        assert!(bad("kafka://h/t?queue=0").starts_with("queue `0` at character 13"), "{}", bad("kafka://h/t?queue=0"));
        assert!(bad("kafka://h/t?acks=1").starts_with("unknown parameter `acks=1` at character 13"));
        let otlp =
            |endpoint: &str, queue, batch| Ok(SinkSpec::Otlp(OtlpSpec { endpoint: endpoint.into(), queue, batch }));
        let (q, b) = (OTLP_QUEUE_DEFAULT, OTLP_BATCH_DEFAULT);
        assert_eq!(SinkSpec::parse("otlp+http://127.0.0.1:4318"), otlp("http://127.0.0.1:4318", q, b));
        assert_eq!(SinkSpec::parse("otlp+http://collector/otlp"), otlp("http://collector/otlp", q, b));
        assert_eq!(SinkSpec::parse("otlp+http://c:4318?queue=10&batch=3"), otlp("http://c:4318", 10, 3));
        assert_eq!(bad("otlp+http://"), "no host at character 13; an OTLP sink is otlp+http://HOST:PORT");
        assert_eq!(
            bad("otlp+http://c:0"),
            "`0` at character 15 is not a port (1 to 65535); an OTLP sink is otlp+http://HOST:PORT"
        );
        assert_eq!(bad("otlp+http://c:1?queue=0"), "queue `0` at character 17: a number of rows from 1 to 10000000");
        assert!(bad("otlp+http://c:1?gzip=1").starts_with("unknown parameter `gzip=1` at character 17"));
        assert!(bad("otlp://c:4317").contains("`otlp://` is not supported"), "{}", bad("otlp://c:4317"));
        assert!(SinkSpec::parse("s3://b/k.parquet").unwrap_err().contains("unknown scheme `s3://`"));
    }
}
