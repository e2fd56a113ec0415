//! Ahead-of-time bundles: a compiled query that runs on hosts without clang.
//!
//! A bundle holds the query text, the plan options, the tracefs format files
//! it was compiled against and the BPF object. Running one re-runs the pure
//! stages against the embedded formats (cheap and deterministic, so the plan
//! matches the object), checks that the running kernel still has those events
//! with the same layouts, and loads the stored object.
//!
//! ```text
//! "EBQAOT1\n" | u32 header length | JSON header | u32 object length | object
//! ```

use crate::{RunningQuery, Scope};
use ebq_front::bind::EventSource;
use ebq_front::catalog::{parse_format, Catalog, TracepointFormat};
use ebq_front::engine::{Engine, PreparedQuery};
use ebq_front::error::{Error, Result};
use ebq_front::host::HostKernel;
use ebq_front::parse::EventName;
use ebq_front::plan::{PlanOptions, SyscallAttach};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const MAGIC: &[u8] = b"EBQAOT1\n";

/// A compiled query.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// The query text.
    pub sql: String,
    /// Plan options it was compiled with.
    pub options: PlanOptions,
    /// (category, name, format file text) of every event the object uses.
    pub formats: Vec<(String, String, String)>,
    /// The BPF object.
    pub object: Vec<u8>,
    /// The ebq version that wrote it.
    pub ebq_version: String,
}

fn bad(path: &Path, why: impl Into<String>) -> Error {
    Error::Io { what: format!("read bundle {}", path.display()), source: std::io::Error::other(why.into()) }
}

impl Bundle {
    /// Compiles `sql` with clang and collects what running it needs.
    pub fn compile(engine: &Engine, sql: &str) -> Result<Bundle> {
        let prepared = engine.prepare(sql)?;
        // The bundle replays its SQL against a catalog with the built-in views
        // only: a user view (`--view`) would be unknown there.
        let q = ebq_front::parse::parse_query(sql)?;
        if let ebq_front::parse::EventName::Tracepoint { category, name } = &q.from.name {
            let view = format!("{category}.{name}");
            let builtin = ebq_front::catalog::views::BUILTIN.iter().any(|(n, _)| n.eq_ignore_ascii_case(&view));
            if !builtin && engine.catalog().view(&view).is_some() {
                return Err(Error::query(
                    ebq_front::error::Stage::Plan,
                    format!("a bundle cannot hold the user view {view} yet: run the query with --view instead"),
                    Some(q.from.span),
                ));
            }
        }
        if prepared.physical.programs.len() != 1 {
            return Err(Error::query(
                ebq_front::error::Stage::Plan,
                "a join of two streams runs two programs and a bundle holds one: run it from its SQL",
                prepared.logical.select_span,
            ));
        }
        let k = &prepared.physical.programs[0];
        // A top-level union's branches are programs of the same object, each on its own event.
        if let Some(probe) =
            k.events().find(|e| !matches!(e.source, EventSource::Tracepoint | EventSource::RawSyscall { .. }))
        {
            // A probe's offsets and argument layout belong to one binary or kernel build.
            return Err(Error::query(
                ebq_front::error::Stage::Plan,
                match probe.source {
                    // Raw arguments bind against this kernel's BTF, which a bundle does not carry.
                    ebq_front::bind::EventSource::TracepointBtf => format!(
                        "{}: bundles hold classic tracepoint programs; a query that reads raw arguments (tp_btf) \
                         runs with `ebq` on the host itself",
                        probe.event_description()
                    ),
                    _ => format!(
                        "{}: bundles hold tracepoint queries only; run probe queries with `ebq` on the host itself",
                        probe.event_description()
                    ),
                },
                None,
            ));
        }
        let object = crate::compile(&prepared.programs[0].source)?;
        let mut formats = vec![];
        let start = k.pairings().flat_map(|p| p.start_events()).map(|e| &e.format);
        let branches = k.branches.iter().map(|b| &b.event.format);
        for f in [&k.event.format, &k.fork_event].into_iter().chain(k.exit_event.as_ref()).chain(start).chain(branches)
        {
            let file = engine.catalog().format_file(&f.category, &f.name)?;
            formats.push((f.category.clone(), f.name.clone(), file.text));
        }
        Ok(Bundle {
            sql: sql.to_string(),
            options: engine.options().clone(),
            formats,
            object,
            ebq_version: env!("CARGO_PKG_VERSION").to_string(),
        })
    }

    /// The bundle as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = json!({
            "ebq_version": self.ebq_version,
            "sql": self.sql,
            "options": {
                "max_groups": self.options.max_groups,
                "ringbuf_bytes": self.options.ringbuf_bytes,
                "wakeup_bytes": self.options.wakeup_bytes,
                "max_pending": self.options.max_pending,
                "max_tracked": self.options.max_tracked,
                "sketch_buckets": self.options.sketch_buckets,
                "attach": self.options.attach.name(),
                "per_cpu_rings": self.options.per_cpu_rings,
                "late_names": self.options.late_names,
                "thread_pairs": self.options.thread_pairs,
                "every_call_raw": self.options.every_call_raw,
                "hist_buckets": match self.options.hist_buckets {
                    ebq_front::hist::Log2::Floor => "floor",
                    ebq_front::hist::Log2::Ceil => "ceil",
                },
            },
            "formats": self.formats.iter().map(|(c, n, t)| json!({"category": c, "name": n, "format": t})).collect::<Vec<_>>(),
        })
        .to_string();
        let mut out = MAGIC.to_vec();
        out.extend((header.len() as u32).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend((self.object.len() as u32).to_le_bytes());
        out.extend(&self.object);
        out
    }

    /// Reads a bundle file.
    pub fn read(path: &Path) -> Result<Bundle> {
        let bytes =
            std::fs::read(path).map_err(|source| Error::Io { what: format!("read {}", path.display()), source })?;
        let rest = bytes.strip_prefix(MAGIC).ok_or_else(|| bad(path, "not an ebq bundle (made by `ebq compile`)"))?;
        let (header, rest) = take_chunk(rest).ok_or_else(|| bad(path, "truncated header"))?;
        let (object, rest) = take_chunk(rest).ok_or_else(|| bad(path, "truncated object"))?;
        if !rest.is_empty() {
            return Err(bad(path, "trailing bytes"));
        }
        let h: Value = serde_json::from_slice(header).map_err(|e| bad(path, format!("bad header: {e}")))?;
        let text = |v: &Value, k: &str| {
            v[k].as_str().map(str::to_string).ok_or_else(|| bad(path, format!("header lacks {k}")))
        };
        let num = |k: &str| {
            h["options"][k]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad(path, format!("header lacks options.{k}")))
        };
        let formats = h["formats"]
            .as_array()
            .ok_or_else(|| bad(path, "header lacks formats"))?
            .iter()
            .map(|f| Ok((text(f, "category")?, text(f, "name")?, text(f, "format")?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(Bundle {
            sql: text(&h, "sql")?,
            options: PlanOptions {
                max_groups: num("max_groups")?,
                ringbuf_bytes: num("ringbuf_bytes")?,
                wakeup_bytes: num("wakeup_bytes")?,
                max_pending: num("max_pending")?,
                max_tracked: num("max_tracked")?,
                sketch_buckets: num("sketch_buckets")?,
                stage_limit: None,
                // Bundles from before the option ran classic programs.
                attach: h["options"]["attach"]
                    .as_str()
                    .map_or(Some(SyscallAttach::Classic), SyscallAttach::from_name)
                    .ok_or_else(|| bad(path, "bad options.attach"))?,
                // Bundles from before the option have one shared ring.
                per_cpu_rings: h["options"]["per_cpu_rings"].as_bool().unwrap_or(false),
                // Bundles from before the option keyed their groups by the names themselves.
                late_names: h["options"]["late_names"].as_bool().unwrap_or(false),
                // Bundles from before these options paired in a HASH and ran raw_syscalls classic.
                thread_pairs: h["options"]["thread_pairs"].as_bool().unwrap_or(false),
                every_call_raw: h["options"]["every_call_raw"].as_bool().unwrap_or(false),
                row_fold: None,
                // Bundles from before the option bucket as bpftrace does.
                hist_buckets: match h["options"]["hist_buckets"].as_str() {
                    None | Some("floor") => ebq_front::hist::Log2::Floor,
                    Some("ceil") => ebq_front::hist::Log2::Ceil,
                    Some(other) => return Err(bad(path, format!("bad options.hist_buckets `{other}`"))),
                },
            },
            formats,
            object: object.to_vec(),
            ebq_version: text(&h, "ebq_version")?,
        })
    }

    /// Prepares the bundled query against its own formats, after checking the
    /// running kernel (`live`) has the same events with the same layouts.
    pub fn prepare(&self, live: &Catalog) -> Result<PreparedQuery> {
        let dir = ScratchCatalog::new(&self.formats)?;
        for (category, name, text) in &self.formats {
            let compiled = parse_format(category, text).map_err(|(line, message)| Error::Io {
                what: format!("read the bundled format of {category}:{name}"),
                source: std::io::Error::other(format!("line {line}: {message}")),
            })?;
            let current = live.tracepoint(category, name).map_err(|_| Error::Environment {
                problem: format!(
                    "this kernel has no tracepoint {}, which the compiled query uses",
                    EventName::Tracepoint { category: category.clone(), name: name.clone() }
                ),
                help: "compile the query on (or for) a kernel that has it, or run the SQL directly".into(),
            })?;
            check_same_layout(&compiled, &current)?;
        }
        // The bundle's formats, this host for the rest.
        let kernel = Arc::new(HostKernel::with_tracefs(&dir.0));
        Engine::with_kernel(kernel).with_options(self.options.clone()).prepare(&self.sql)
    }

    /// Prepares and starts the bundled query without clang.
    pub fn start(&self, live: &Catalog, scope: Scope) -> Result<(PreparedQuery, RunningQuery)> {
        let prepared = self.prepare(live)?;
        crate::env::check_privileges()?;
        let running = RunningQuery::start_object(&prepared.physical, &self.object, scope)?;
        Ok((prepared, running))
    }
}

fn take_chunk(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let rest = &bytes[4..];
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// The compiled-against layout must equal the running kernel's, field by field.
fn check_same_layout(compiled: &TracepointFormat, current: &TracepointFormat) -> Result<()> {
    let describe = |f: &ebq_front::catalog::TpField| format!("{} at offset {}, size {}", f.name, f.offset, f.size);
    for (a, b) in compiled.fields.iter().zip(&current.fields) {
        if (&a.name, a.offset, a.size, a.signed) != (&b.name, b.offset, b.size, b.signed) {
            return Err(Error::Environment {
                problem: format!(
                    "tracepoint {}:{} changed since the query was compiled: {} there, {} here",
                    compiled.category,
                    compiled.name,
                    describe(a),
                    describe(b)
                ),
                help: "recompile with `ebq compile` on this kernel".into(),
            });
        }
    }
    if compiled.fields.len() != current.fields.len() {
        return Err(Error::Environment {
            problem: format!(
                "tracepoint {}:{} has {} fields here, {} when compiled",
                compiled.category,
                compiled.name,
                current.fields.len(),
                compiled.fields.len()
            ),
            help: "recompile with `ebq compile` on this kernel".into(),
        });
    }
    Ok(())
}

/// A temporary tracefs-shaped directory holding the bundled format files.
struct ScratchCatalog(PathBuf);

impl ScratchCatalog {
    fn new(formats: &[(String, String, String)]) -> Result<ScratchCatalog> {
        let dir = crate::scratch_dir()?;
        let scratch = ScratchCatalog(dir);
        for (category, name, text) in formats {
            let valid = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid(category) || !valid(name) {
                return Err(Error::Io {
                    what: "read bundle".into(),
                    source: std::io::Error::other(format!("bad event name {category}:{name}")),
                });
            }
            let d = scratch.0.join("events").join(category).join(name);
            std::fs::create_dir_all(&d)
                .and_then(|_| std::fs::write(d.join("format"), text))
                .map_err(|source| Error::Io { what: format!("write {}", d.display()), source })?;
        }
        Ok(scratch)
    }
}

impl Drop for ScratchCatalog {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
