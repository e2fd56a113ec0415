//! `ebq serve --config ebq.toml`: a daemon running several named aggregate
//! queries continuously and exporting their windows as metrics.
//!
//! - [`config`]: the TOML file, typed and checked with positions;
//! - [`query`]: one served query (prepare, start, publish its windows);
//! - [`names`]: metric names must not collide (checked with the file);
//! - [`publish`]: the one place windows and ebq's own metrics are published;
//! - [`prom`]: `/metrics` (OpenMetrics or 0.0.4 text, one thread per client);
//! - [`caps`]: dropping capabilities once everything is attached;
//! - [`watch`]: `reload_on_change`, a reload when the file's content changed (a ConfigMap);
//! - [`crate::signals`] (shared with `ebq run`): SIGHUP reloads, SIGTERM/SIGINT stop.
//!
//! All queries run on the main thread (a running query is not `Send`), which
//! polls each without blocking every 10 ms: window flips happen within ~10 ms
//! of their time and windows stay exact (a window ends when its flip runs).

mod caps;
mod config;
mod names;
mod prom;
mod publish;
mod query;
mod watch;
mod web;

use crate::signals::{self, OnHangup};
use config::Config;
use publish::Publisher;
use query::{check, Checked, Served};
use std::process::ExitCode;
use std::time::Duration;

/// How often the loop polls the queries.
const TICK: Duration = Duration::from_millis(10);

fn read_config(path: &str) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("error: cannot read {path}: {e}"))?;
    config::parse(path, &text, &|name, set| {
        let q = crate::shipped::find(name).ok_or_else(|| crate::shipped::unknown(name))?;
        crate::shipped::instantiate(q.text, set)
    })
    .map_err(|e| format!("error: {e}"))
}

/// Prepares every query of `fresh`; all errors at once. `running` are the
/// queries that keep running beside them: metric names must not collide
/// across both.
fn check_all(engine: &ebq::Engine, fresh: &[config::QueryConfig], running: &[&Served]) -> Result<Vec<Checked>, String> {
    let (mut ok, mut errs) = (vec![], vec![]);
    for q in fresh {
        match check(engine, q) {
            Ok(c) => ok.push(c),
            Err(e) => errs.push(format!("error: {e}")),
        }
    }
    if errs.is_empty() {
        let all: Vec<_> =
            running.iter().map(|s| (&s.config, &s.schema)).chain(ok.iter().map(|c| (&c.config, &c.schema))).collect();
        names::check(&all)?;
        Ok(ok)
    } else {
        Err(errs.join("\n"))
    }
}

/// Same query, ignoring where in the file it is written.
fn same(a: &config::QueryConfig, b: &config::QueryConfig) -> bool {
    a.name == b.name
        && a.sql == b.sql
        && a.interval == b.interval
        && a.max_series == b.max_series
        && a.series_ttl == b.series_ttl
        && a.limits == b.limits
        && a.pin == b.pin
        && a.pin_header == b.pin_header
        && a.keep_pins == b.keep_pins
        && a.max_pair_age == b.max_pair_age
        && a.sinks == b.sinks
        && a.cgroup.as_ref().map(|c| &c.path) == b.cgroup.as_ref().map(|c| &c.path)
}

/// Runs the daemon; `check_only` validates the file and exits.
pub fn main(config_path: &str, check_only: bool) -> Result<ExitCode, String> {
    let config = read_config(config_path)?;
    let engine = crate::engine_default()?;
    let checked = check_all(&engine, &config.queries, &[])?;
    let web = config.web_config_file.as_deref().map(web::WebConfig::load).transpose()?.map(std::sync::Arc::new);
    if check_only {
        eprintln!("ebq serve: {config_path}: {} queries OK", checked.len());
        return Ok(ExitCode::SUCCESS);
    }
    ebq::runtime::env::check_privileges().map_err(|e| format!("error: {e}"))?;
    // Held for the daemon's life: run counts and times for every query's program.
    let _stats = ebq::runtime::enable_bpf_stats().ok();
    let listener = prom::bind(config.listen)?;
    let shared = prom::Shared::default();
    let scheme = if web.as_ref().is_some_and(|w| w.tls.is_some()) { "https" } else { "http" };
    prom::serve(listener, shared.clone(), web);
    signals::install(OnHangup::Reload);
    let mut publisher = Publisher::new(shared);
    publisher.set_otlp(config.otlp.as_ref());
    let mut served: Vec<Served> =
        checked.into_iter().map(|c| Served::start(c, &mut publisher, config.otlp.as_ref())).collect();
    // Every query is attached or marked up = 0: /metrics stops answering 503.
    publisher.ready();
    eprintln!("ebq serve: {} queries, metrics at {scheme}://{}/metrics", served.len(), config.listen);
    let keep: &[u32] = if config.reload { &[caps::CAP_BPF, caps::CAP_PERFMON] } else { &[] };
    match caps::drop_all_but(keep) {
        Ok(()) => eprintln!(
            "ebq serve: capabilities reduced to {} (CapEff {:#x})",
            caps::names(keep),
            caps::effective().unwrap_or(0)
        ),
        Err(e) => eprintln!("ebq serve: warning: could not drop capabilities: {e}"),
    }
    let mut listen = config.listen;
    let mut watch = config.reload_on_change.map(|every| watch::ConfigWatch::new(config_path, every));
    while !signals::stopping() {
        let hangup = signals::take_hangup();
        // After a SIGHUP the watch takes the file as read, so one change reloads once.
        let changed = match watch.as_mut() {
            Some(w) if hangup => {
                w.refresh();
                false
            }
            Some(w) => w.changed(),
            None => false,
        };
        if hangup || changed {
            if changed {
                eprintln!("ebq serve: {config_path} changed");
            }
            reload(config_path, &engine, &mut served, &mut publisher, &mut listen);
        }
        for s in &mut served {
            s.step(&mut publisher);
        }
        publisher.heartbeat();
        std::thread::sleep(TICK);
    }
    let n = served.len();
    for s in served {
        s.stop();
    }
    eprintln!("ebq serve: stopped; {n} queries detached");
    Ok(ExitCode::SUCCESS)
}

/// SIGHUP: unchanged queries keep running with their state; removed ones
/// detach; added and changed ones start. A file that does not check is
/// refused as a whole and the running set stays.
fn reload(
    path: &str,
    engine: &ebq::Engine,
    served: &mut Vec<Served>,
    publisher: &mut Publisher,
    listen: &mut std::net::SocketAddr,
) {
    let next = match read_config(path).and_then(|c| {
        // Check only what would start; unchanged queries are already running.
        let otlp = c.otlp.as_ref();
        let fresh: Vec<_> = c.queries.iter().filter(|q| !served.iter().any(|s| s.runs(q, otlp))).cloned().collect();
        let kept: Vec<&Served> = served.iter().filter(|s| c.queries.iter().any(|q| s.runs(q, otlp))).collect();
        check_all(engine, &fresh, &kept).map(|checked| (c, checked))
    }) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("ebq serve: reload refused, still running the previous configuration:\n{e}");
            publisher.reload(false);
            return;
        }
    };
    let (config, mut checked) = next;
    if config.listen != *listen {
        eprintln!("ebq serve: warning: `listen` changed to {}; restart ebq to move /metrics", config.listen);
    }
    publisher.set_otlp(config.otlp.as_ref());
    let old = std::mem::take(served);
    let (mut kept, mut removed) = (0, 0);
    for s in old {
        if config.queries.iter().any(|q| s.runs(q, config.otlp.as_ref())) {
            served.push(s);
            kept += 1;
        } else {
            let name = s.config.name.clone();
            s.stop();
            publisher.remove(&name);
            removed += 1;
            eprintln!("ebq serve: query `{name}` detached");
        }
    }
    let started = checked.len();
    for c in checked.drain(..) {
        served.push(Served::start(c, publisher, config.otlp.as_ref()));
    }
    // File order.
    served.sort_by_key(|s| config.queries.iter().position(|q| q.name == s.config.name));
    publisher.reload(true);
    eprintln!("ebq serve: reloaded {path}: {kept} kept, {removed} detached, {started} started");
}
