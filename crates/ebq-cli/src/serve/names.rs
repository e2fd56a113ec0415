//! `serve --check`: no two families on one `/metrics` page may write the same
//! sample name.
//!
//! Names are derived (`ebq_<query>_<column>`, snake_case, unit suffixes), so
//! different queries and columns can meet: queries `x-y` and `x_y` both write
//! `ebq_x_y_*`; a query `query` with a column `up` writes ebq's own
//! `ebq_query_up`; a counter `req_bytes` (`ebq_q_req_bytes_total`, whose
//! OpenMetrics family is `ebq_q_req_bytes`) meets a gauge `req_kb`
//! (`ebq_q_req_bytes`). Scrapers would then merge or reject series, so the
//! file is refused, naming both sides.

use super::config::QueryConfig;
use super::publish::{export_failures_family, own_families, reload_family, sink_families, OwnCounts};
use ebq::export::exposition::reserved_names;
use ebq::export::{MetricKind, MetricSchema};
use std::collections::BTreeMap;

/// Checks the families of `queries` against each other and ebq's own.
pub fn check(queries: &[(&QueryConfig, &MetricSchema)]) -> Result<(), String> {
    let mut families: Vec<(String, MetricKind, String)> = own_families("", None, &OwnCounts::default())
        .into_iter()
        .chain([reload_family((0, 0)), export_failures_family("", "otlp", 0)])
        .chain(sink_families(
            "",
            &[(String::new(), ebq::sink::QueueCounts { delivery: Some(Default::default()), ..Default::default() })],
        ))
        .map(|f| {
            let who = format!("ebq's own metric `{}`", f.name);
            (f.name, f.kind, who)
        })
        .collect();
    for (q, schema) in queries {
        for (name, kind, column) in schema.family_names() {
            let who = format!("{}: query `{}` column `{column}` (metric `{name}`)", q.at, q.name);
            families.push((name, kind, who));
        }
    }
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    let mut errors: Vec<String> = vec![];
    for (name, kind, who) in &families {
        let clash = reserved_names(name, *kind).into_iter().find_map(|n| owner.get(&n).map(|o| (n, *o)));
        if let Some((sample, first)) = clash {
            errors.push(format!(
                "error: {who} collides with {first}: both would write `{sample}`; rename the column or the query"
            ));
            continue;
        }
        for n in reserved_names(name, *kind) {
            owner.insert(n, who);
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}
