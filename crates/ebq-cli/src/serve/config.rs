//! `ebq serve`'s configuration file (TOML), read into typed structs and
//! checked with positions: every error names `FILE:LINE:COLUMN`.
//!
//! ```toml
//! listen = "127.0.0.1:9435"     # /metrics address (loopback unless allow_remote)
//! allow_remote = false
//! web_config_file = "web.yml"   # TLS and basic auth, exporter-toolkit format (serve/web.rs)
//! reload = true                 # keep CAP_BPF+CAP_PERFMON so SIGHUP can start queries
//! reload_on_change = "10s"      # also reload when the file's content changed (checked this often)
//! max_series = 10000            # default per-query series bound
//! series_ttl = "10m"            # default: drop a series not updated for this long
//!
//! [[query]]
//! name = "vfsstat"              # [a-z0-9_-]+, unique
//! shipped = "vfsstat"           # or sql = "SELECT …", or file = "/etc/ebq/q.sql"
//! set = { interval_ms = "5000" }# shipped-query parameters
//! interval = "10s"              # queries without WINDOW: publish running totals this often
//! max_series = 1000
//! series_ttl = "1h"
//! max_groups = 10240            # the `ebq run` options of the same names:
//! max_pending = 10240           #   JOIN pairs open at once
//! max_pair_age = "60s"          #   JOIN pairs whose end has not come by then are evicted
//! max_tracked = 65536           #   processes tracked (the -c scope; unused by serve's queries)
//! cgroup = "/sys/fs/cgroup/app"  # `ebq run --cgroup`: only tasks in this cgroup v2 group and below it
//!                                #   (checked in the kernel; absolute, or below the cgroup2 root: "/app")
//! max_sketch_buckets = 65536    #   QUANTILE/Pxx sketch entries
//! ringbuf_size = 8388608        #   bytes of each ring buffer (a join of two streams reads rows through them)
//! wakeup_bytes = 262144
//! pin = "/sys/fs/bpf/ebq/vfsstat"   # pins the group map for external samplers (see docs/src/serve/pins.md)
//! pin_header = "/run/ebq/vfsstat.h"  # the layout header (default /run/ebq/pins/<pin below /sys/fs/bpf>.h)
//! keep_pins = false
//! sinks = ["/var/lib/ebq/vfsstat.parquet"]  # every window into files too (.jsonl, .csv, .parquet, .arrow, kafka://HOST:PORT/TOPIC, otlp+http://HOST:PORT)
//!
//! [otlp]                        # push windows over OTLP/HTTP too
//! endpoint = "http://127.0.0.1:4318/v1/metrics"
//! interval = "10s"
//! resource = { "service.name" = "ebq" }
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use toml::Spanned;

/// Default `/metrics` address (the port is registered for ebq nowhere; 9435 is free in
/// the Prometheus exporter port list's neighbourhood).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9435";
/// Default bound on series per query.
pub const DEFAULT_MAX_SERIES: usize = 10_000;
/// Default publishing interval of queries without WINDOW.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// Default time after which a series no window updated is dropped: long
/// enough for queries with minute-long windows and for Prometheus' 5-minute
/// staleness, short enough that exited processes leave within minutes.
pub const DEFAULT_SERIES_TTL: Duration = Duration::from_secs(600);

/// The file as written (spans kept for errors).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    listen: Option<Spanned<String>>,
    allow_remote: Option<bool>,
    reload: Option<bool>,
    reload_on_change: Option<Spanned<toml::Value>>,
    max_series: Option<Spanned<i64>>,
    series_ttl: Option<Spanned<toml::Value>>,
    web_config_file: Option<String>,
    #[serde(default)]
    query: Vec<RawQuery>,
    otlp: Option<RawOtlp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    name: Spanned<String>,
    sql: Option<Spanned<String>>,
    file: Option<Spanned<String>>,
    shipped: Option<Spanned<String>>,
    #[serde(default)]
    set: BTreeMap<String, toml::Value>,
    interval: Option<Spanned<toml::Value>>,
    max_series: Option<Spanned<i64>>,
    series_ttl: Option<Spanned<toml::Value>>,
    max_groups: Option<Spanned<i64>>,
    max_pending: Option<Spanned<i64>>,
    max_pair_age: Option<Spanned<toml::Value>>,
    max_tracked: Option<Spanned<i64>>,
    max_sketch_buckets: Option<Spanned<i64>>,
    ringbuf_size: Option<Spanned<i64>>,
    wakeup_bytes: Option<Spanned<i64>>,
    pin: Option<Spanned<String>>,
    pin_header: Option<Spanned<String>>,
    keep_pins: Option<bool>,
    cgroup: Option<Spanned<String>>,
    #[serde(default)]
    sinks: Vec<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOtlp {
    endpoint: Spanned<String>,
    interval: Option<Spanned<toml::Value>>,
    #[serde(default)]
    resource: BTreeMap<String, String>,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Where `/metrics` listens.
    pub listen: SocketAddr,
    /// Whether a non-loopback `listen` is allowed.
    pub allow_remote: bool,
    /// Whether SIGHUP may start queries: keeps CAP_BPF and CAP_PERFMON after
    /// the start (`reload = false` drops every capability; a reload can then
    /// only detach queries).
    pub reload: bool,
    /// How often to compare the file with what was last read and reload when
    /// it changed, as SIGHUP does: a Kubernetes ConfigMap volume is updated in
    /// place and nothing signals the daemon (serve/deploy.md). `None`: SIGHUP only.
    pub reload_on_change: Option<Duration>,
    /// The queries, in file order.
    pub queries: Vec<QueryConfig>,
    /// OTLP push settings, when `[otlp]` is present.
    pub otlp: Option<OtlpConfig>,
    /// The exporter-toolkit web configuration (TLS, basic auth) for `/metrics`,
    /// relative paths resolved against the config file's directory.
    pub web_config_file: Option<std::path::PathBuf>,
}

/// One `[[query]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryConfig {
    /// Name: the `<query>` in metric names and the `query` label.
    pub name: String,
    /// The query text (shipped queries with their parameters filled in).
    pub sql: String,
    /// Publishing interval for queries without WINDOW.
    pub interval: Duration,
    /// Series bound.
    pub max_series: usize,
    /// A series not updated for this long is dropped.
    pub series_ttl: Duration,
    /// The plan limits `ebq run` takes as options.
    pub limits: Limits,
    /// Where to pin the query's aggregate map (bpffs path), if asked.
    pub pin: Option<PathBuf>,
    /// Where to write the pins' layout header (`--pin-header`); default beside `/run/ebq/pins`.
    pub pin_header: Option<PathBuf>,
    /// Leave the pins in place on shutdown.
    pub keep_pins: bool,
    /// JOIN: open pairs older than this are evicted (`--max-pair-age`).
    pub max_pair_age: Duration,
    /// Files every window is written to as well (`ebq run --sink` specs;
    /// checked: file paths with a known extension, used by no other query).
    pub sinks: Vec<String>,
    /// The cgroup v2 group the query is scoped to (`ebq run --cgroup`), if any.
    pub cgroup: Option<CgroupKey>,
    /// `FILE:LINE:COL` of the query's definition, for later errors.
    pub at: String,
    /// `FILE:LINE:COL` of its SQL (the `sql`, `file` or `shipped` value).
    pub sql_at: String,
}

/// A query's `cgroup` key: the path as written (resolved to the group's id
/// when the query is checked, as `ebq run --cgroup` does: the group must exist
/// then) and where it is written, for that error.
#[derive(Debug, Clone, PartialEq)]
pub struct CgroupKey {
    /// Absolute (`/sys/fs/cgroup/app`) or below the cgroup2 root (`/app`).
    pub path: String,
    /// `FILE:LINE:COL` of the value.
    pub at: String,
}

/// Per-query kernel limits: `ebq run`'s options of the same names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `--max-groups`.
    pub max_groups: u32,
    /// `--max-pending`.
    pub max_pending: u32,
    /// `--max-tracked`.
    pub max_tracked: u32,
    /// `--max-sketch-buckets`.
    pub max_sketch_buckets: u32,
    /// `--ringbuf-size`.
    pub ringbuf_size: u32,
    /// `--wakeup-bytes`.
    pub wakeup_bytes: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        let o = ebq::plan::PlanOptions::default();
        Limits {
            max_groups: o.max_groups,
            max_pending: o.max_pending,
            max_tracked: o.max_tracked,
            max_sketch_buckets: o.sketch_buckets,
            ringbuf_size: o.ringbuf_bytes,
            wakeup_bytes: o.wakeup_bytes,
        }
    }
}

impl Limits {
    /// The plan options these limits give.
    pub fn plan_options(&self) -> ebq::plan::PlanOptions {
        ebq::plan::PlanOptions {
            max_groups: self.max_groups,
            ringbuf_bytes: self.ringbuf_size,
            wakeup_bytes: self.wakeup_bytes,
            max_pending: self.max_pending,
            max_tracked: self.max_tracked,
            sketch_buckets: self.max_sketch_buckets,
            // Exported HISTs are native histograms: buckets (2^(n-1), 2^n], as Prometheus and OTel have them.
            hist_buckets: ebq::hist::Log2::Ceil,
            ..Default::default()
        }
    }
}

/// `[otlp]`.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// OTLP/HTTP metrics endpoint (`http://host:4318/v1/metrics`).
    pub endpoint: String,
    /// Push interval.
    pub interval: Duration,
    /// Resource attributes (`host.name` is added by the exporter when absent).
    pub resource: BTreeMap<String, String>,
}

/// Looks up a shipped query by name and fills its parameters (`set`).
pub type ShippedLookup = dyn Fn(&str, &[String]) -> Result<String, String>;

/// Byte offset → `LINE:COL` (1-based, columns in characters).
fn line_col(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    format!("{line}:{col}")
}

/// Parses and validates `text` (read from `path`, used in messages).
/// `shipped` looks up a shipped query and fills its parameters. The global
/// keys first, then each `[[query]]` ([`query_config`]), then `[otlp]`.
pub fn parse(path: &str, text: &str, shipped: &ShippedLookup) -> Result<Config, String> {
    let at = |offset: usize| format!("{path}:{}", line_col(text, offset));
    let raw: RawConfig = toml::from_str(text).map_err(|e| match e.span() {
        Some(s) => format!("{}: {}", at(s.start), e.message()),
        None => format!("{path}: {}", e.message()),
    })?;
    let place = Place { path, text, shipped };
    let err = |s: std::ops::Range<usize>, msg: String| place.err(s, msg);
    let listen = match &raw.listen {
        Some(l) => l.get_ref().parse::<SocketAddr>().map_err(|_| {
            err(l.span(), format!("listen: `{}` is not an address like 127.0.0.1:9435 or [::1]:9435", l.get_ref()))
        })?,
        None => DEFAULT_LISTEN.parse().expect("valid default"),
    };
    let allow_remote = raw.allow_remote.unwrap_or(false);
    if !listen.ip().is_loopback() && !allow_remote {
        let s = raw.listen.as_ref().map_or(0..0, |l| l.span());
        return Err(err(
            s,
            format!(
                "listen: {listen} is not a loopback address; /metrics is unauthenticated, so ebq only \
                 serves it beyond this host when the file says `allow_remote = true`"
            ),
        ));
    }
    let default_series = match &raw.max_series {
        Some(m) => positive(m, "max_series").map_err(|e| err(m.span(), e))?,
        None => DEFAULT_MAX_SERIES,
    };
    let default_ttl = match &raw.series_ttl {
        Some(t) => duration(t.get_ref()).map_err(|e| err(t.span(), format!("series_ttl: {e}")))?,
        None => DEFAULT_SERIES_TTL,
    };
    let defaults = (default_series, default_ttl);
    let mut queries: Vec<QueryConfig> = vec![];
    for q in raw.query {
        let query = query_config(&place, q, defaults, &queries)?;
        queries.push(query);
    }
    if queries.is_empty() {
        return Err(format!("{path}: no queries: add at least one [[query]] table with a name and sql"));
    }
    let otlp = match raw.otlp {
        Some(o) => Some(otlp_config(&place, o)?),
        None => None,
    };
    let web_config_file = raw.web_config_file.map(|f| {
        let dir = std::path::Path::new(path).parent().unwrap_or(std::path::Path::new("."));
        dir.join(f)
    });
    let reload_on_change = match &raw.reload_on_change {
        Some(t) => Some(duration(t.get_ref()).map_err(|e| err(t.span(), format!("reload_on_change: {e}")))?),
        None => None,
    };
    Ok(Config {
        listen,
        allow_remote,
        reload: raw.reload.unwrap_or(true),
        reload_on_change,
        queries,
        otlp,
        web_config_file,
    })
}

/// Where the file is, for messages (`PATH:LINE:COL: …`), and how shipped queries are found.
struct Place<'a> {
    path: &'a str,
    text: &'a str,
    shipped: &'a ShippedLookup,
}

impl Place<'_> {
    /// `msg` at the start of span `s`.
    fn err(&self, s: std::ops::Range<usize>, msg: String) -> String {
        format!("{}: {msg}", self.at(s.start))
    }

    fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.path, line_col(self.text, offset))
    }

    fn shipped(&self, name: &str, set: &[String]) -> Result<String, String> {
        (self.shipped)(name, set)
    }
}

/// One `[[query]]`: its name and SQL (from `sql`, `file` or `shipped`), its
/// times, limits, pin and sinks, each checked against the queries before it.
/// `defaults`: the file's max_series and series_ttl.
fn query_config(
    place: &Place,
    q: RawQuery,
    (default_series, default_ttl): (usize, Duration),
    queries: &[QueryConfig],
) -> Result<QueryConfig, String> {
    let (name, sql, source_at) = query_source(place, &q, queries)?;
    let interval = match &q.interval {
        Some(i) => duration(i.get_ref()).map_err(|e| place.err(i.span(), format!("query `{name}`: interval: {e}")))?,
        None => DEFAULT_INTERVAL,
    };
    let max_series = match &q.max_series {
        Some(m) => positive(m, "max_series").map_err(|e| place.err(m.span(), format!("query `{name}`: {e}")))?,
        None => default_series,
    };
    let series_ttl = match &q.series_ttl {
        Some(t) => {
            duration(t.get_ref()).map_err(|e| place.err(t.span(), format!("query `{name}`: series_ttl: {e}")))?
        }
        None => default_ttl,
    };
    let max_pair_age = match &q.max_pair_age {
        Some(t) => {
            duration(t.get_ref()).map_err(|e| place.err(t.span(), format!("query `{name}`: max_pair_age: {e}")))?
        }
        None => ebq::runtime::DEFAULT_MAX_PAIR_AGE,
    };
    let limits = query_limits(place, &q, &name)?;
    let pin = query_pin(place, &q, &name, queries)?;
    let sinks = query_sinks(place, &q, &name, queries)?;
    let cgroup = query_cgroup(place, &q, &name)?;
    Ok(QueryConfig {
        name,
        sql,
        interval,
        max_series,
        series_ttl,
        limits,
        pin,
        pin_header: q.pin_header.as_ref().map(|h| PathBuf::from(h.get_ref())),
        keep_pins: q.keep_pins.unwrap_or(false),
        max_pair_age,
        sinks,
        cgroup,
        at: place.at(q.name.span().start),
        sql_at: place.at(source_at),
    })
}

/// The query's name (checked, unique) and its SQL from its one source, with
/// where that source is.
fn query_source(place: &Place, q: &RawQuery, queries: &[QueryConfig]) -> Result<(String, String, usize), String> {
    let name = q.name.get_ref().clone();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(
            place.err(q.name.span(), format!("query name `{name}`: use lowercase letters, digits, `_` and `-`"))
        );
    }
    if queries.iter().any(|o| o.name == name) {
        return Err(place.err(q.name.span(), format!("query name `{name}` is used twice")));
    }
    let given: Vec<&Spanned<String>> = [&q.sql, &q.file, &q.shipped].into_iter().flatten().collect();
    let source = match given.as_slice() {
        [one] => *one,
        [] => return Err(place.err(q.name.span(), format!("query `{name}`: give one of `sql`, `file` or `shipped`"))),
        [_, second, ..] => {
            return Err(place.err(second.span(), format!("query `{name}`: give only one of `sql`, `file` or `shipped`")))
        }
    };
    let set: Vec<String> = q
        .set
        .iter()
        .map(|(k, v)| match v {
            toml::Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect();
    if !set.is_empty() && q.shipped.is_none() {
        return Err(place.err(q.name.span(), format!("query `{name}`: `set` fills parameters of a `shipped` query")));
    }
    let sql = if let Some(s) = &q.sql {
        s.get_ref().clone()
    } else if let Some(f) = &q.file {
        std::fs::read_to_string(f.get_ref())
            .map_err(|e| place.err(f.span(), format!("query `{name}`: cannot read {}: {e}", f.get_ref())))?
    } else {
        let s = q.shipped.as_ref().expect("one source");
        place.shipped(s.get_ref(), &set).map_err(|e| place.err(s.span(), format!("query `{name}`: {e}")))?
    };
    Ok((name, sql, source.span().start))
}

/// The map and buffer sizes a query sets (positive, below 2^32; the ring a
/// power of two).
fn query_limits(place: &Place, q: &RawQuery, name: &str) -> Result<Limits, String> {
    let mut limits = Limits::default();
    for (key, value, slot) in [
        ("max_groups", &q.max_groups, &mut limits.max_groups),
        ("max_pending", &q.max_pending, &mut limits.max_pending),
        ("max_tracked", &q.max_tracked, &mut limits.max_tracked),
        ("max_sketch_buckets", &q.max_sketch_buckets, &mut limits.max_sketch_buckets),
        ("ringbuf_size", &q.ringbuf_size, &mut limits.ringbuf_size),
        ("wakeup_bytes", &q.wakeup_bytes, &mut limits.wakeup_bytes),
    ] {
        if let Some(v) = value {
            let n = positive(v, key).map_err(|e| place.err(v.span(), format!("query `{name}`: {e}")))?;
            *slot = u32::try_from(n)
                .map_err(|_| place.err(v.span(), format!("query `{name}`: {key} must be below 2^32, not {n}")))?;
        }
    }
    if let Some(r) =
        q.ringbuf_size.as_ref().filter(|_| !limits.ringbuf_size.is_power_of_two() || limits.ringbuf_size < 4096)
    {
        return Err(place.err(
            r.span(),
            format!("query `{name}`: ringbuf_size must be a power of two of at least 4096, not {}", r.get_ref()),
        ));
    }
    Ok(limits)
}

/// The query's pin directory (under /sys/fs/bpf/, unique), and the keys that need it.
fn query_pin(place: &Place, q: &RawQuery, name: &str, queries: &[QueryConfig]) -> Result<Option<PathBuf>, String> {
    let pin = match &q.pin {
        Some(p) => {
            let path = PathBuf::from(p.get_ref());
            if !path.starts_with("/sys/fs/bpf/") || path.file_name().is_none() {
                return Err(place.err(
                    p.span(),
                    format!("query `{name}`: pin must be a path under /sys/fs/bpf/, e.g. /sys/fs/bpf/ebq/{name}"),
                ));
            }
            if queries.iter().any(|o| o.pin.as_ref() == Some(&path)) {
                return Err(place.err(p.span(), format!("query `{name}`: pin {} is used twice", path.display())));
            }
            Some(path)
        }
        None => None,
    };
    if q.keep_pins.is_some() && pin.is_none() {
        return Err(place.err(q.name.span(), format!("query `{name}`: keep_pins needs a `pin` path")));
    }
    if let (Some(h), None) = (&q.pin_header, &pin) {
        return Err(place.err(h.span(), format!("query `{name}`: pin_header needs a `pin` path")));
    }
    Ok(pin)
}

/// The query's file sinks, relative to the config file's directory, each used once.
fn query_sinks(place: &Place, q: &RawQuery, name: &str, queries: &[QueryConfig]) -> Result<Vec<String>, String> {
    let mut sinks: Vec<String> = vec![];
    for spec in &q.sinks {
        let given = spec.get_ref();
        // Relative to the file's directory, as web_config_file is.
        let dir = std::path::Path::new(place.path).parent().unwrap_or(std::path::Path::new("."));
        let parsed = crate::sink_spec::SinkSpec::parse(given);
        let resolved = match parsed {
            // A topic or a URL is not a path.
            Ok(crate::sink_spec::SinkSpec::Kafka(_) | crate::sink_spec::SinkSpec::Otlp(_)) => given.clone(),
            _ => dir.join(given).to_string_lossy().into_owned(),
        };
        let why = match parsed {
            Ok(crate::sink_spec::SinkSpec::Terminal) => {
                Some("ebq serve has no terminal; give a file or a kafka:// topic".to_string())
            }
            // Several queries may send to one OTLP receiver (each its own records).
            Ok(crate::sink_spec::SinkSpec::Otlp(_)) if sinks.contains(&resolved) => Some("is used twice".to_string()),
            Ok(crate::sink_spec::SinkSpec::Otlp(_)) => None,
            Ok(_) if sinks.contains(&resolved) || queries.iter().any(|o| o.sinks.contains(&resolved)) => {
                Some("is used twice".to_string())
            }
            Ok(_) => None,
            Err(why) => Some(why),
        };
        if let Some(why) = why {
            return Err(place.err(spec.span(), format!("query `{name}`: sinks: `{given}`: {why}")));
        }
        sinks.push(resolved);
    }
    Ok(sinks)
}

/// The query's `cgroup`: a path naming a group, not a way out of the cgroup2
/// mount (`..`); whether the group exists is checked with the query.
fn query_cgroup(place: &Place, q: &RawQuery, name: &str) -> Result<Option<CgroupKey>, String> {
    let Some(c) = &q.cgroup else { return Ok(None) };
    let path = c.get_ref().trim();
    let why = if path.is_empty() {
        Some("is empty; give a cgroup v2 group, e.g. /sys/fs/cgroup/system.slice/app.service".to_string())
    } else if std::path::Path::new(path).components().any(|p| p == std::path::Component::ParentDir) {
        Some(format!("`{path}` has a `..`; give the group's own path"))
    } else {
        None
    };
    match why {
        Some(why) => Err(place.err(c.span(), format!("query `{name}`: cgroup {why}"))),
        None => Ok(Some(CgroupKey { path: path.to_string(), at: place.at(c.span().start) })),
    }
}

/// `[otlp]`: a usable endpoint and the push interval.
fn otlp_config(place: &Place, o: RawOtlp) -> Result<OtlpConfig, String> {
    let e = o.endpoint.get_ref();
    if let Err(why) = ebq::export::otlp::check_endpoint(e) {
        return Err(place.err(o.endpoint.span(), format!("otlp.endpoint: {why}")));
    }
    let interval = match &o.interval {
        Some(i) => duration(i.get_ref()).map_err(|m| place.err(i.span(), format!("otlp.interval: {m}")))?,
        None => DEFAULT_INTERVAL,
    };
    Ok(OtlpConfig { endpoint: e.clone(), interval, resource: o.resource })
}

fn positive(v: &Spanned<i64>, what: &str) -> Result<usize, String> {
    match usize::try_from(*v.get_ref()) {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{what} must be a positive number, not {}", v.get_ref())),
    }
}

/// `"10s"`, `"500ms"`, `"2m"`, or a number of seconds.
pub fn duration(v: &toml::Value) -> Result<Duration, String> {
    let secs = match v {
        toml::Value::Integer(i) => *i as f64,
        toml::Value::Float(f) => *f,
        toml::Value::String(s) => crate::seconds::parse(s)
            .map_err(|_| format!("`{}` is not a duration like \"10s\" or \"500ms\"", s.trim()))?,
        other => return Err(format!("{other} is not a duration like \"10s\" or \"500ms\"")),
    };
    if !(0.01..=86_400.0).contains(&secs) {
        return Err(format!("{secs} s is out of range (10 ms to 1 day)"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_shipped(name: &str, _: &[String]) -> Result<String, String> {
        Err(format!("no shipped query `{name}`"))
    }

    fn parse_ok(text: &str) -> Config {
        parse("ebq.toml", text, &no_shipped).unwrap()
    }

    fn parse_err(text: &str) -> String {
        parse("ebq.toml", text, &no_shipped).unwrap_err()
    }

    #[test]
    fn a_full_config() {
        let c = parse_ok(
            r#"
listen = "127.0.0.1:19435"
max_series = 50
reload_on_change = "5s"

[[query]]
name = "reads"
sql = "SELECT COUNT(*) FROM syscalls.sys_enter_read"
interval = "500ms"
pin = "/sys/fs/bpf/ebq/reads"
keep_pins = true
pin_header = "/run/ebq/reads.h"

[[query]]
name = "writes"
sql = "SELECT COUNT(*) FROM syscalls.sys_enter_write"
max_series = 7
series_ttl = "90s"
max_pair_age = "2s"
max_groups = 20000
max_sketch_buckets = 1000
ringbuf_size = 4096
sinks = ["/var/lib/ebq/writes.parquet", "w.jsonl"]
cgroup = "/system.slice/app.service"

[otlp]
endpoint = "http://127.0.0.1:4318/v1/metrics"
interval = 15
resource = { "service.name" = "ebq", "deployment.environment" = "test" }
"#,
        );
        assert_eq!(c.listen.to_string(), "127.0.0.1:19435");
        assert!(c.reload);
        assert_eq!(c.reload_on_change, Some(Duration::from_secs(5)));
        assert_eq!(c.queries.len(), 2);
        assert_eq!(c.queries[0].interval, Duration::from_millis(500));
        assert_eq!(c.queries[0].max_series, 50);
        assert_eq!(c.queries[0].pin.as_deref(), Some(std::path::Path::new("/sys/fs/bpf/ebq/reads")));
        assert!(c.queries[0].keep_pins);
        assert_eq!(c.queries[0].pin_header.as_deref(), Some(std::path::Path::new("/run/ebq/reads.h")));
        assert_eq!(c.queries[1].pin_header, None);
        assert_eq!(c.queries[0].at, "ebq.toml:7:8");
        assert_eq!(c.queries[1].max_series, 7);
        assert_eq!(c.queries[0].series_ttl, DEFAULT_SERIES_TTL);
        assert_eq!(c.queries[0].limits, Limits::default());
        assert_eq!(c.queries[1].series_ttl, Duration::from_secs(90));
        assert_eq!(c.queries[1].max_pair_age, Duration::from_secs(2));
        assert_eq!(c.queries[0].max_pair_age, ebq::runtime::DEFAULT_MAX_PAIR_AGE);
        let l = c.queries[1].limits;
        assert_eq!((l.max_groups, l.max_sketch_buckets, l.ringbuf_size), (20000, 1000, 4096));
        assert_eq!(l.max_pending, Limits::default().max_pending);
        assert_eq!(l.plan_options().max_groups, 20000);
        assert_eq!(c.queries[1].interval, DEFAULT_INTERVAL);
        assert_eq!(c.queries[1].sinks, ["/var/lib/ebq/writes.parquet", "w.jsonl"]);
        assert!(c.queries[0].sinks.is_empty());
        assert_eq!(c.queries[0].cgroup, None);
        let cg = CgroupKey { path: "/system.slice/app.service".into(), at: "ebq.toml:24:10".into() };
        assert_eq!(c.queries[1].cgroup, Some(cg));
        let o = c.otlp.unwrap();
        assert_eq!(o.interval, Duration::from_secs(15));
        assert_eq!(o.resource["service.name"], "ebq");
    }

    #[test]
    fn errors_are_positioned() {
        let q = "[[query]]\nname = \"a\"\nsql = \"SELECT 1\"\n";
        assert_eq!(
            parse_err(&format!("reload_on_change = \"soon\"\n{q}")),
            "ebq.toml:1:20: reload_on_change: `soon` is not a duration like \"10s\" or \"500ms\""
        );
        assert_eq!(parse_err(&format!("{q}colour = 1\n")), "ebq.toml:4:1: unknown field `colour`, expected one of `name`, `sql`, `file`, `shipped`, `set`, `interval`, `max_series`, `series_ttl`, `max_groups`, `max_pending`, `max_pair_age`, `max_tracked`, `max_sketch_buckets`, `ringbuf_size`, `wakeup_bytes`, `pin`, `pin_header`, `keep_pins`, `cgroup`, `sinks`");
        assert_eq!(
            parse_err(&format!("{q}sinks = [\"/tmp/w.parquet\", \"w.txt\"]\n")),
            "ebq.toml:4:28: query `a`: sinks: `w.txt`: cannot tell the format from `.txt`; name the file .jsonl, .json, .csv, .parquet or .arrow"
        );
        assert_eq!(
            parse_err(&format!("{q}sinks = [\"-\"]\n")),
            "ebq.toml:4:10: query `a`: sinks: `-`: ebq serve has no terminal; give a file or a kafka:// topic"
        );
        let two = format!(
            "{q}sinks = [\"/tmp/w.csv\"]\n[[query]]\nname = \"b\"\nsql = \"SELECT 1\"\nsinks = [\"/tmp/w.csv\"]\n"
        );
        assert_eq!(parse_err(&two), "ebq.toml:8:10: query `b`: sinks: `/tmp/w.csv`: is used twice");
        assert_eq!(
            parse_err(&format!("{q}pin_header = \"/tmp/x.h\"\n")),
            "ebq.toml:4:14: query `a`: pin_header needs a `pin` path"
        );
        assert_eq!(
            parse_err(&format!("{q}cgroup = \"\"\n")),
            "ebq.toml:4:10: query `a`: cgroup is empty; give a cgroup v2 group, e.g. /sys/fs/cgroup/system.slice/app.service"
        );
        assert_eq!(
            parse_err(&format!("{q}cgroup = \"/sys/fs/cgroup/../x\"\n")),
            "ebq.toml:4:10: query `a`: cgroup `/sys/fs/cgroup/../x` has a `..`; give the group's own path"
        );
        assert_eq!(
            parse_err(&format!("{q}max_groups = 0\n")),
            "ebq.toml:4:14: query `a`: max_groups must be a positive number, not 0"
        );
        assert_eq!(
            parse_err(&format!("{q}max_groups = 5000000000\n")),
            "ebq.toml:4:14: query `a`: max_groups must be below 2^32, not 5000000000"
        );
        assert_eq!(
            parse_err(&format!("{q}ringbuf_size = 5000\n")),
            "ebq.toml:4:16: query `a`: ringbuf_size must be a power of two of at least 4096, not 5000"
        );
        assert_eq!(
            parse_err(&format!("series_ttl = \"never\"\n{q}")),
            "ebq.toml:1:14: series_ttl: `never` is not a duration like \"10s\" or \"500ms\""
        );
        assert_eq!(
            parse_err(&format!("listen = \"0.0.0.0:9435\"\n{q}")),
            "ebq.toml:1:10: listen: 0.0.0.0:9435 is not a loopback address; /metrics is unauthenticated, so ebq only serves it beyond this host when the file says `allow_remote = true`"
        );
        assert!(parse_ok(&format!("listen = \"0.0.0.0:9435\"\nallow_remote = true\n{q}")).allow_remote);
        assert_eq!(
            parse_err(&format!("{q}interval = \"soon\"\n")),
            "ebq.toml:4:12: query `a`: interval: `soon` is not a duration like \"10s\" or \"500ms\""
        );
        assert_eq!(parse_err(&format!("{q}{q}")), "ebq.toml:5:8: query name `a` is used twice");
        assert_eq!(
            parse_err("[[query]]\nname = \"Bad Name\"\nsql = \"x\"\n"),
            "ebq.toml:2:8: query name `Bad Name`: use lowercase letters, digits, `_` and `-`"
        );
        assert_eq!(
            parse_err("[[query]]\nname = \"a\"\n"),
            "ebq.toml:2:8: query `a`: give one of `sql`, `file` or `shipped`"
        );
        assert_eq!(
            parse_err("[[query]]\nname = \"a\"\nsql = \"x\"\nshipped = \"vfsstat\"\n"),
            "ebq.toml:4:11: query `a`: give only one of `sql`, `file` or `shipped`"
        );
        assert_eq!(
            parse_err(&format!("{q}pin = \"/tmp/x\"\n")),
            "ebq.toml:4:7: query `a`: pin must be a path under /sys/fs/bpf/, e.g. /sys/fs/bpf/ebq/a"
        );
        assert_eq!(
            parse_err(&format!("{q}max_series = 0\n")),
            "ebq.toml:4:14: query `a`: max_series must be a positive number, not 0"
        );
        assert_eq!(
            parse_err("[[query]]\nname = \"a\"\nshipped = \"nope\"\n"),
            "ebq.toml:3:11: query `a`: no shipped query `nope`"
        );
        assert_eq!(
            parse_err(&format!("{q}[otlp]\nendpoint = \"grpc://x\"\n")),
            "ebq.toml:5:12: otlp.endpoint: OTLP endpoint `grpc://x`: expected http://HOST:PORT, e.g. http://127.0.0.1:4318"
        );
        assert!(parse_err("listen = ").starts_with("ebq.toml:1:10: "), "{}", parse_err("listen = "));
        assert_eq!(parse_err(""), "ebq.toml: no queries: add at least one [[query]] table with a name and sql");
    }
}
