//! Finding tracefs and reading event formats from it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::glob::glob_match;
use super::suggest::suggest_event;
use super::{parse_format, Catalog, CatalogError, TracepointFormat};

/// Where tracefs is usually mounted, in order of preference (the debugfs path is
/// for older systems that only mount debugfs).
const TRACEFS_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

impl Catalog {
    /// The first of `/sys/kernel/tracing` and `/sys/kernel/debug/tracing` that has an
    /// `events` directory.
    ///
    /// A root that exists but cannot be read (not running as root) is reported as
    /// an I/O error rather than "not mounted", since that is the fix the user needs.
    pub fn open() -> Result<Catalog, CatalogError> {
        let mut denied = None;
        for root in TRACEFS_ROOTS {
            let events = Path::new(root).join("events");
            match fs::metadata(&events) {
                Ok(meta) if meta.is_dir() => return Ok(Catalog::at(root)),
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && denied.is_none() => {
                    denied = Some(CatalogError::Io { path: events.display().to_string(), source: e });
                }
                _ => {}
            }
        }
        Err(denied.unwrap_or_else(|| CatalogError::NoTracefs { looked: TRACEFS_ROOTS.join(", ") }))
    }

    /// A catalog rooted at `root`, which must contain `events/<cat>/<name>/format`.
    /// Nothing is checked until the catalog is used; meant for tests and fixtures.
    pub fn at(root: impl Into<PathBuf>) -> Catalog {
        Catalog { root: root.into() }
    }

    /// The tracefs root this catalog reads.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads and parses `events/<category>/<name>/format`.
    ///
    /// Names that could escape the events directory (`/`, `..`, NUL, empty) are
    /// rejected as unknown without touching the file system. An event that does
    /// not exist yields [`CatalogError::UnknownEvent`] with up to three close
    /// existing events as suggestions.
    pub fn tracepoint(&self, category: &str, name: &str) -> Result<TracepointFormat, CatalogError> {
        let event = format!("tracepoint:{category}:{name}");
        if !is_safe_component(category) || !is_safe_component(name) {
            return Err(CatalogError::UnknownEvent { event, suggestions: Vec::new() });
        }
        let path = self.root.join("events").join(category).join(name).join("format");
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                // Suggestions are best effort: an unreadable catalog just gives none.
                let events = self.list(None).unwrap_or_default();
                let suggestions = suggest_event(category, name, &events);
                return Err(CatalogError::UnknownEvent { event, suggestions });
            }
            Err(source) => return Err(CatalogError::Io { path: path.display().to_string(), source }),
        };
        parse_format(category, &text).map_err(|(line, message)| CatalogError::BadFormat {
            path: path.display().to_string(),
            line,
            message,
        })
    }

    /// All `(category, name)` events that have a `format` file, sorted.
    ///
    /// With a `glob` (`*`, `?`), only events whose `cat:name` matches are kept; a
    /// glob without `:` may also match the bare name, so `sys_enter_*` works.
    pub fn list(&self, glob: Option<&str>) -> Result<Vec<(String, String)>, CatalogError> {
        let events_dir = self.root.join("events");
        let mut out = Vec::new();
        // ftrace's own events (function, print, …) have format files but are not
        // tracepoints BPF can attach to.
        for category in subdirs(&events_dir)?.into_iter().filter(|c| c != "ftrace") {
            for name in subdirs(&events_dir.join(&category))? {
                let wanted = glob.is_none_or(|g| {
                    glob_match(g, &format!("{category}:{name}")) || (!g.contains(':') && glob_match(g, &name))
                });
                if wanted && events_dir.join(&category).join(&name).join("format").is_file() {
                    out.push((category.clone(), name));
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Longest category or event name looked up (tracefs names are far shorter;
/// longer ones cannot exist and would only make suggestions slow).
const MAX_NAME_LEN: usize = 128;

/// True for a single, ordinary path component: no separators, no `..`, no NUL,
/// not absurdly long.
fn is_safe_component(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME_LEN && s != "." && !s.contains(['/', '\0']) && !s.contains("..")
}

/// Names of the subdirectories of `dir` (skipping files such as `enable` and
/// `header_page`, and names that are not UTF-8).
fn subdirs(dir: &Path) -> Result<Vec<String>, CatalogError> {
    let io_err = |source| CatalogError::Io { path: dir.display().to_string(), source };
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let (true, Ok(name)) = (is_dir, entry.file_name().into_string()) {
            names.push(name);
        }
    }
    Ok(names)
}
