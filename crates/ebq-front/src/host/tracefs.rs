//! A tracefs tree: which events have a `format` file, and their text.
//!
//! The running kernel's tree is found at [`Tracefs::open`]; a fixture tree
//! (the same shape, checked in) is read the same way.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::FormatFile;

/// Why a tracefs tree could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TracefsError {
    /// No tracefs mount was found.
    #[error("tracefs is not mounted (looked in {looked})")]
    NotMounted {
        /// The directories that were checked.
        looked: String,
    },
    /// Reading tracefs failed.
    #[error("cannot read {path}: {source}")]
    Io {
        /// File path.
        path: String,
        /// Underlying error.
        source: io::Error,
    },
}

/// Where tracefs is usually mounted, in order of preference (the debugfs path is
/// for older systems that only mount debugfs).
const TRACEFS_ROOTS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// A directory holding `events/<category>/<name>/format`.
#[derive(Debug, Clone)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// The first of `/sys/kernel/tracing` and `/sys/kernel/debug/tracing` that has an
    /// `events` directory.
    ///
    /// A root that exists but cannot be read (not running as root) is reported as
    /// an I/O error rather than "not mounted", since that is the fix the user needs.
    pub fn open() -> Result<Tracefs, TracefsError> {
        let mut denied = None;
        for root in TRACEFS_ROOTS {
            let events = Path::new(root).join("events");
            match fs::metadata(&events) {
                Ok(meta) if meta.is_dir() => return Ok(Tracefs::at(root)),
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && denied.is_none() => {
                    denied = Some(TracefsError::Io { path: events.display().to_string(), source: e });
                }
                _ => {}
            }
        }
        Err(denied.unwrap_or_else(|| TracefsError::NotMounted { looked: TRACEFS_ROOTS.join(", ") }))
    }

    /// The tree at `root`. Nothing is checked until it is read.
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs { root: root.into() }
    }

    /// The directory this tree is read from.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `format` file of `category:name` (both single, safe path
    /// components), or `None` when there is no such event.
    pub fn format(&self, category: &str, name: &str) -> Result<Option<FormatFile>, TracefsError> {
        let path = self.root.join("events").join(category).join(name).join("format");
        match fs::read_to_string(&path) {
            Ok(text) => Ok(Some(FormatFile { path: path.display().to_string(), text })),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(None),
            Err(source) => Err(TracefsError::Io { path: path.display().to_string(), source }),
        }
    }

    /// All `(category, name)` events that have a `format` file, unsorted.
    /// ftrace's own events (function, print, …) have format files but are not
    /// tracepoints BPF can attach to, and are left out.
    pub fn events(&self) -> Result<Vec<(String, String)>, TracefsError> {
        let events_dir = self.root.join("events");
        let mut out = Vec::new();
        for category in subdirs(&events_dir)?.into_iter().filter(|c| c != "ftrace") {
            for name in subdirs(&events_dir.join(&category))? {
                if events_dir.join(&category).join(&name).join("format").is_file() {
                    out.push((category.clone(), name));
                }
            }
        }
        Ok(out)
    }
}

/// Names of the subdirectories of `dir` (skipping files such as `enable` and
/// `header_page`, and names that are not UTF-8).
fn subdirs(dir: &Path) -> Result<Vec<String>, TracefsError> {
    let io_err = |source| TracefsError::Io { path: dir.display().to_string(), source };
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
