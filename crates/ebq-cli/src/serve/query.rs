//! One served query: its config, its metric schema, and its running state.

use super::config::{OtlpConfig, QueryConfig};
use super::publish::Publisher;
use ebq::export::MetricSchema;
use ebq::plan::KernelWindow;
use ebq::runtime::pin::PinOptions;
use ebq::sink::{FanOut, QueuedSink, Rotation, Sink};
use ebq::{Engine, PreparedQuery, RunningQuery, Scope};
use std::time::{Duration, Instant};

/// A prepared query (validated: binds, plans, is an aggregate).
pub struct Checked {
    /// Its configuration.
    pub config: QueryConfig,
    prepared: PreparedQuery,
    /// How its windows map to metric families.
    pub schema: MetricSchema,
    /// Whom it traces: everything, or its `cgroup`'s tasks.
    scope: Scope,
}

/// Prepares `q` with its own limits (`max_groups`, …); the error names the query and where it is defined, then
/// shows the SQL error with its own line:column. A `cgroup` is resolved here, as `ebq run --cgroup` resolves
/// it before anything runs: a group that does not exist is an error at the key's position.
pub fn check(engine: &Engine, q: &QueryConfig) -> Result<Checked, String> {
    let engine = engine.clone().with_options(q.limits.plan_options());
    let prepared = engine.prepare(&q.sql).map_err(|e| {
        let text = e.render(&q.sql);
        format!("{}: query `{}`: {}", q.sql_at, q.name, text.trim_start_matches("error: ").trim_end())
    })?;
    let schema =
        MetricSchema::of(&q.name, &prepared.physical).map_err(|e| format!("{}: query `{}`: {e}", q.sql_at, q.name))?;
    let scope = match &q.cgroup {
        Some(c) => {
            let (id, level) =
                ebq::host::cgroups::cgroup_of(&c.path).map_err(|e| format!("{}: query `{}`: {e}", c.at, q.name))?;
            Scope::Cgroup { id, level }
        }
        None => Scope::All,
    };
    Ok(Checked { config: q.clone(), prepared, schema, scope })
}

/// A query the daemon runs (or tried to).
pub struct Served {
    /// Its configuration.
    pub config: QueryConfig,
    /// How its windows map to metric families.
    pub schema: MetricSchema,
    /// `None` after it failed: not restarted in a loop (a reload restarts it).
    running: Option<RunningQuery>,
    /// Queries without WINDOW: when to publish the next running total.
    next_snapshot: Option<Instant>,
    last_own: Instant,
    /// The query's `sinks` (files, Kafka topics or OTLP receivers every window goes to), each behind its own
    /// queue that drops when full: the daemon's loop never waits for a disk.
    /// `None` without sinks, or after a write failed (logged).
    sinks: Option<FanOut>,
    /// The `[otlp]` resource its OTLP logs sinks were opened with.
    resource: Vec<(String, String)>,
}

/// The resource attributes of the `[otlp]` table (none without one).
fn resource_of(otlp: Option<&OtlpConfig>) -> Vec<(String, String)> {
    otlp.map(|o| o.resource.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
}

/// Creates the files of `c`'s `sinks` (before the query attaches). An OTLP logs receiver's records carry
/// `resource` (the `[otlp]` table's, as the metrics pushes do) and the query's cgroup.
fn open_sinks(c: &Checked, resource: &[(String, String)]) -> Result<Option<FanOut>, String> {
    if c.config.sinks.is_empty() {
        return Ok(None);
    }
    let mut sinks: Vec<(String, Box<dyn Sink + Send>)> = vec![];
    for spec in &c.config.sinks {
        use crate::sink_spec::{KafkaFormat, SinkSpec, KAFKA_QUEUE_DEFAULT};
        let sink = match SinkSpec::parse(spec) {
            Ok(SinkSpec::File { path, format }) => {
                crate::output::file(&path, format, Rotation::default(), &c.prepared, false)?
            }
            // A Kafka sink's format and queue come from its spec (`?format=arrow&queue=N`).
            Ok(SinkSpec::Kafka(k)) => crate::output::kafka(spec, &k, KafkaFormat::Json, KAFKA_QUEUE_DEFAULT)?,
            Ok(SinkSpec::Otlp(o)) => {
                crate::output::otlp_logs(spec, &o, resource, c.config.cgroup.as_ref().map(|g| g.path.as_str()))?
            }
            _ => return Err(format!("sinks: `{spec}` is not a file, a kafka:// topic or an otlp+http:// receiver")),
        };
        sinks.push((spec.clone(), sink));
    }
    FanOut::spawn(sinks, QueuedSink::DEFAULT_BYTES).map(Some).map_err(|e| format!("sinks: {e}"))
}

impl Served {
    /// Loads and attaches `c`; a failure is logged and counted, and the query stays down.
    /// `otlp`: the file's `[otlp]` table, whose resource the query's OTLP logs sinks send too.
    pub fn start(c: Checked, publisher: &mut Publisher, otlp: Option<&OtlpConfig>) -> Served {
        let name = c.config.name.clone();
        publisher.start(&name, c.config.max_series, c.config.series_ttl);
        let resource = resource_of(otlp);
        let sinks = match open_sinks(&c, &resource) {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "ebq serve: query `{name}` ({}) failed to start: {}",
                    c.config.at,
                    e.trim_start_matches("error: ")
                );
                publisher.error(&name);
                let s = Served {
                    config: c.config,
                    schema: c.schema,
                    running: None,
                    next_snapshot: None,
                    last_own: Instant::now(),
                    sinks: None,
                    resource,
                };
                publisher.own(&name, None, &[]);
                return s;
            }
        };
        let started = RunningQuery::start(&c.prepared, c.scope.clone()).and_then(|mut r| {
            r.set_max_pair_age(c.config.max_pair_age);
            if let Some(dir) = &c.config.pin {
                let options =
                    PinOptions { dir: dir.clone(), header: c.config.pin_header.clone(), keep: c.config.keep_pins };
                let header = r.pin_maps(&options)?;
                eprintln!("ebq serve: query `{name}` pinned under {} (layout: {})", dir.display(), header.display());
            }
            Ok(r)
        });
        let running = match started {
            Ok(r) => {
                eprintln!("ebq serve: query `{name}` attached");
                Some(r)
            }
            Err(e) => {
                eprintln!(
                    "ebq serve: query `{name}` ({}) failed to start: {}",
                    c.config.at,
                    e.render(&c.config.sql).trim_end()
                );
                publisher.error(&name);
                None
            }
        };
        // A join of two streams is always windowed (its kernel part is the first stream's row program).
        let windowless =
            c.prepared.physical.programs[0].window == KernelWindow::None && c.prepared.physical.window_join().is_none();
        let next_snapshot = windowless.then(|| Instant::now() + c.config.interval);
        let last_own = Instant::now();
        let s = Served { config: c.config, schema: c.schema, running, next_snapshot, last_own, sinks, resource };
        publisher.own(&name, s.stats().as_ref(), &s.sink_counts());
        s
    }

    /// Whether `q`, in a file whose `[otlp]` table is `otlp`, is what this query runs: the same query
    /// and, when it sends OTLP logs, the same resource on them (a reload restarts it otherwise).
    pub fn runs(&self, q: &QueryConfig, otlp: Option<&OtlpConfig>) -> bool {
        use crate::sink_spec::SinkSpec;
        let sends_logs = self.config.sinks.iter().any(|s| matches!(SinkSpec::parse(s), Ok(SinkSpec::Otlp(_))));
        super::same(&self.config, q) && (!sends_logs || self.resource == resource_of(otlp))
    }

    fn sink_counts(&self) -> Vec<(String, ebq::sink::QueueCounts)> {
        self.sinks.as_ref().map(FanOut::counts).unwrap_or_default()
    }

    fn stats(&self) -> Option<ebq::QueryStats> {
        self.running.as_ref().and_then(|r| r.stats().ok())
    }

    /// Publishes what closed since the last call; never blocks.
    pub fn step(&mut self, publisher: &mut Publisher) {
        let Some(r) = &mut self.running else { return };
        let name = &self.config.name;
        let result = match self.next_snapshot {
            Some(at) if Instant::now() >= at => {
                self.next_snapshot = Some(at + self.config.interval);
                r.snapshot().map(|o| vec![o])
            }
            Some(_) => Ok(vec![]),
            None => r.poll(Duration::ZERO),
        };
        match result {
            Ok(outs) => {
                for out in &outs {
                    let (t, fams) = self.schema.families(out);
                    publisher.window(name, t, &fams, out.window);
                    if let Some(Err(e)) = self.sinks.as_mut().map(|s| s.write(out)) {
                        eprintln!("ebq serve: query `{name}`: {e}; its sinks are closed (the metrics go on)");
                        self.sinks = None;
                    }
                }
                if !outs.is_empty() || self.last_own.elapsed() >= Duration::from_secs(1) {
                    self.last_own = Instant::now();
                    let counts = self.sink_counts();
                    publisher.own(name, self.stats().as_ref(), &counts);
                }
            }
            Err(e) => {
                eprintln!(
                    "ebq serve: query `{name}` failed and is detached: {}",
                    e.render(&self.config.sql).trim_end()
                );
                publisher.error(name);
                self.running = None;
                let counts = self.sink_counts();
                publisher.own(name, None, &counts);
            }
        }
    }

    /// Detaches (dropping the running query closes its links and maps) and
    /// finishes the sinks: what they queued is written, then the files' footers.
    pub fn stop(mut self) {
        self.running.take();
        if let Some(Err(e)) = self.sinks.as_mut().map(|s| s.finish()) {
            eprintln!("ebq serve: query `{}`: finishing its sinks: {e}", self.config.name);
        }
    }
}
