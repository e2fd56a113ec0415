//! `--otlp URL`: push every window the query closes to an OTLP/HTTP receiver.

use ebq::export::otlp::{push_output, unix_now_ns, OtlpConfig};
use ebq::export::{self_families, MetricSchema};
use ebq::{Output, PreparedQuery, QueryStats};

/// `--otlp-resource KEY=VALUE`s (of `--otlp` and of `otlp+http://` sinks) as pairs.
pub fn resource_pairs(resource: &[String]) -> Result<Vec<(String, String)>, String> {
    resource
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| format!("error: --otlp-resource expects KEY=VALUE, got `{kv}`"))
        })
        .collect()
}

/// Pushes windows as they close; failures are reported and counted, and
/// tracing goes on (a collector may restart).
pub struct Pusher {
    config: OtlpConfig,
    schema: MetricSchema,
    started_unix_ns: u64,
    /// No WINDOW: every output is a running total (cumulative).
    windowless: bool,
    windows: u64,
    pushed: u64,
    failed: u64,
}

impl Pusher {
    /// A pusher for `prepared`, named `query` in metric names.
    pub fn new(url: &str, resource: &[String], query: &str, prepared: &PreparedQuery) -> Result<Pusher, String> {
        let schema = MetricSchema::of(query, &prepared.physical).map_err(|e| format!("error: --otlp: {e}"))?;
        let mut config = OtlpConfig::new(url, ebq::host::host_name());
        config.resource = resource_pairs(resource)?;
        // Check the URL now, not at the first window.
        ebq::export::otlp::check_endpoint(url).map_err(|e| format!("error: {e}"))?;
        let windowless = prepared.physical.programs[0].window == ebq::plan::KernelWindow::None;
        Ok(Pusher { config, schema, started_unix_ns: unix_now_ns(), windowless, windows: 0, pushed: 0, failed: 0 })
    }

    /// Pushes each output with the query's own counters.
    pub fn push(&mut self, outs: &[Output], stats: &QueryStats) {
        for out in outs {
            if !out.partial {
                self.windows += 1;
            }
            let own = self_families(&self.schema.query, stats, self.windows);
            match push_output(&self.config, &self.schema, out, &own, self.started_unix_ns, self.windowless) {
                Ok(()) => self.pushed += 1,
                Err(e) => {
                    self.failed += 1;
                    eprintln!("ebq: {e}");
                }
            }
        }
    }

    /// One line for the end of the run.
    pub fn summary(&self) -> String {
        let failed = if self.failed > 0 { format!(", {} failed", self.failed) } else { String::new() };
        format!("ebq: pushed {} results to {} over OTLP{failed}", self.pushed, self.config.endpoint)
    }
}
