//! Looking events up in a kernel's catalog: safe names, parsed formats,
//! globs and "did you mean" suggestions over what [`KernelInfo`] reports.

use std::sync::Arc;

use super::glob::glob_match;
use super::{parse_format, Catalog, CatalogError, TracepointFormat};
use crate::host::{FormatFile, HostKernel, KernelInfo};
use crate::parse::EventName;
use crate::suggest::{best, closeness};

impl Catalog {
    /// The running kernel's catalog (see [`HostKernel::open`]).
    pub fn open() -> Result<Catalog, CatalogError> {
        Ok(Catalog::new(Arc::new(HostKernel::open()?)))
    }

    /// The catalog of `kernel`.
    pub fn new(kernel: Arc<dyn KernelInfo>) -> Catalog {
        Catalog { kernel, views: super::views::builtin() }
    }

    /// The catalog of the fixture kernel checked in with this crate
    /// ([`FixtureKernel::checked_in`](crate::host::FixtureKernel::checked_in)), for tests.
    pub fn fixture() -> Catalog {
        Catalog::new(crate::host::FixtureKernel::checked_in())
    }

    /// The kernel this catalog describes.
    pub fn kernel(&self) -> &dyn KernelInfo {
        &*self.kernel
    }

    /// The kernel, shared.
    pub fn kernel_arc(&self) -> Arc<dyn KernelInfo> {
        self.kernel.clone()
    }

    /// The format file of `category:name`, unparsed (what a bundle stores).
    ///
    /// Names that could escape the events directory (`/`, `..`, NUL, empty) are
    /// rejected as unknown without touching the file system. An event that does
    /// not exist yields [`CatalogError::UnknownEvent`] with up to three close
    /// existing events as suggestions.
    pub fn format_file(&self, category: &str, name: &str) -> Result<FormatFile, CatalogError> {
        let event = format!("tracepoint:{category}:{name}");
        if !is_safe_component(category) || !is_safe_component(name) {
            return Err(CatalogError::UnknownEvent { event, suggestions: Vec::new() });
        }
        match self.kernel.tracepoint_format(category, name)? {
            Some(file) => Ok(file),
            None => {
                // Suggestions are best effort: an unreadable catalog just gives none.
                let mut events = self.list(None).unwrap_or_default();
                let own =
                    super::expand::Expansion::ALL.map(|x| (super::expand::CATEGORY.to_string(), x.name().to_string()));
                events.extend(own);
                let suggestions = suggest_event(category, name, &events);
                Err(CatalogError::UnknownEvent { event, suggestions })
            }
        }
    }

    /// Reads and parses the format of `category:name` (see [`Catalog::format_file`]).
    pub fn tracepoint(&self, category: &str, name: &str) -> Result<TracepointFormat, CatalogError> {
        let file = self.format_file(category, name)?;
        parse_format(category, &file.text).map_err(|(line, message)| CatalogError::BadFormat {
            path: file.path,
            line,
            message,
        })
    }

    /// All `(category, name)` events that have a `format` file, sorted.
    ///
    /// With a `glob` (`*`, `?`), only events whose `cat:name` matches are kept; a
    /// glob without `:` may also match the bare name, so `sys_enter_*` works.
    pub fn list(&self, glob: Option<&str>) -> Result<Vec<(String, String)>, CatalogError> {
        let mut out: Vec<(String, String)> = self
            .kernel
            .tracepoints()?
            .into_iter()
            .filter(|(category, name)| {
                glob.is_none_or(|g| {
                    glob_match(g, &format!("{category}:{name}")) || (!g.contains(':') && glob_match(g, name))
                })
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

impl Catalog {
    /// ebq's expanding events (`aio.submit`; [`super::expand`]) whose system
    /// call this kernel traces, as queries name them, filtered by `glob` as
    /// [`Catalog::list`] filters tracepoints (`aio:*`, `submit`).
    pub fn list_expanding(&self, glob: Option<&str>) -> Vec<String> {
        super::expand::Expansion::ALL
            .into_iter()
            .filter(|x| {
                let (category, name) = x.trigger();
                self.kernel.tracepoint_format(category, name).is_ok_and(|f| f.is_some())
            })
            .filter(|x| {
                let full = format!("{}:{}", super::expand::CATEGORY, x.name());
                glob.is_none_or(|g| glob_match(g, &full) || (!g.contains(':') && glob_match(g, x.name())))
            })
            .map(|x| format!("{}.{}", super::expand::CATEGORY, x.name()))
            .collect()
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

/// Up to three of the `(category, name)` events closest to `category:name`,
/// formatted as queries name them (`tracepoint:cat:name`, `aio.submit`).
///
/// Both the full `cat:name` and the bare name are compared, so a wrong category
/// (`syscall:sys_enter_read`) and a typo in the name (`sys_enter_pred64`) are both
/// caught.
fn suggest_event(category: &str, name: &str, events: &[(String, String)]) -> Vec<String> {
    let full = format!("{category}:{name}");
    let scored = events
        .iter()
        .filter_map(|(c, n)| {
            let by_full = closeness(&full, &format!("{c}:{n}"));
            let by_name = closeness(name, n);
            let score = by_full.into_iter().chain(by_name).reduce(f64::max)?;
            // ebq's own events are written as queries name them.
            let shown = EventName::Tracepoint { category: c.clone(), name: n.clone() };
            Some((shown.to_string(), score))
        })
        .collect();
    best(scored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expanding_events_are_suggested_as_written() {
        let events =
            [("aio".to_string(), "submit".to_string()), ("syscalls".to_string(), "sys_enter_read".to_string())];
        assert_eq!(suggest_event("aio", "submt", &events), ["aio.submit"]);
        assert_eq!(suggest_event("syscalls", "sys_enter_reed", &events), ["tracepoint:syscalls:sys_enter_read"]);
    }
}
