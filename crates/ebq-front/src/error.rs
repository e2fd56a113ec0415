//! One error type for the whole pipeline, with per-stage detail.
//!
//! Query errors carry a [`Span`] into the SQL text instead of baking the position
//! into the message, so every front end (CLI, library, tests) can mark the text
//! its own way; [`Error::render`] draws the usual caret picture.

use std::fmt;

/// A 1-based line/column position in the query text (columns count characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Location {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1.
    pub column: u32,
}

impl Location {
    /// Its byte offset in `sql`, or `sql`'s length when it lies past the end.
    pub fn byte_offset(self, sql: &str) -> usize {
        let mut line = 1;
        let mut col = 1;
        for (i, c) in sql.char_indices() {
            if line == self.line && col == self.column {
                return i;
            }
            if c == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        }
        sql.len()
    }
}

/// A range of query text: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First character.
    pub start: Location,
    /// One past the last character (same line as `start` for most tokens).
    pub end: Location,
}

impl Span {
    /// A span from two sqlparser positions. sqlparser uses 0 for "unknown".
    pub fn from_sql(span: sqlparser::tokenizer::Span) -> Option<Span> {
        if span.start.line == 0 {
            return None;
        }
        Some(Span {
            start: Location { line: span.start.line as u32, column: span.start.column as u32 },
            end: Location { line: span.end.line as u32, column: span.end.column as u32 },
        })
    }

    /// The smallest span covering both.
    pub fn union(self, other: Span) -> Span {
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// The pipeline stage an error comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Turning text into an AST.
    Parse,
    /// Resolving events, columns and types.
    Bind,
    /// Choosing the kernel/user split and checking BPF limits.
    Plan,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Parse => "syntax error",
            Stage::Bind => "error",
            Stage::Plan => "plan error",
        })
    }
}

/// An error in the user's query: what, where, and how to fix it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    /// Which stage found it.
    pub stage: Stage,
    /// One sentence saying what is wrong.
    pub message: String,
    /// Where in the query text, when known.
    pub span: Option<Span>,
    /// A suggestion (`did you mean …`), when there is one.
    pub help: Option<String>,
    /// Text that, put in place of `span`, fixes the query; [`Error::render`]
    /// shows the whole fixed query, ready to copy.
    pub fix: Option<String>,
}

impl QueryError {
    /// A new error without help text.
    pub fn new(stage: Stage, message: impl Into<String>, span: Option<Span>) -> Self {
        QueryError { stage, message: message.into(), span, help: None, fix: None }
    }

    /// Adds help text.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds the text that replaces the span to fix the query.
    pub fn with_fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }

    /// `sql` with the span replaced by the fix, when the error has both.
    /// [`crate::engine::Engine::prepare`] binds it before the error is
    /// returned, and drops a fix (and the help proposing it) that would not bind.
    pub fn fixed_query(&self, sql: &str) -> Option<String> {
        let (fix, span) = (self.fix.as_ref()?, self.span?);
        let (start, end) = (span.start.byte_offset(sql), span.end.byte_offset(sql));
        (start < end).then(|| format!("{}{fix}{}", &sql[..start], &sql[end..]))
    }
}

/// Errors raised while reading the catalog.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Tracefs could not be read: not mounted, or not readable.
    #[error(transparent)]
    Tracefs(#[from] crate::host::TracefsError),
    /// `category:name` has no `format` file.
    #[error("unknown event `{event}`")]
    UnknownEvent {
        /// The event as the user wrote it.
        event: String,
        /// Closest existing events, best first (at most 3).
        suggestions: Vec<String>,
    },
    /// The format file exists but could not be parsed.
    #[error("cannot parse {path}: line {line}: {message}")]
    BadFormat {
        /// File path.
        path: String,
        /// 1-based line number in the format file.
        line: usize,
        /// What was wrong.
        message: String,
    },
}

/// Everything that can go wrong between query text and results.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The query is wrong (parse, bind or plan).
    #[error("{}: {}", .0.stage, .0.message)]
    Query(QueryError),
    /// The catalog could not be read.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// The machine cannot run queries: not root, no clang, no tracefs, no BTF…
    #[error("{problem}\n  help: {help}")]
    Environment {
        /// What is missing.
        problem: String,
        /// What to do about it.
        help: String,
    },
    /// clang rejected generated code. Always an ebq bug.
    #[error("internal error: clang could not compile the generated BPF program (this is an ebq bug; please report it with `ebq explain`'s output)\n{stderr}")]
    Compile {
        /// clang's diagnostics.
        stderr: String,
    },
    /// The kernel rejected a program ebq generated for a query that bound.
    #[error("{}", load_message(.what, .errno, .log))]
    Load {
        /// What was being done (`load`, `attach tracepoint:…`).
        what: String,
        /// The failing call's errno.
        errno: i32,
        /// The verifier log, if the failure came from the verifier.
        log: String,
    },
    /// A system call failed while running.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

fn load_message(what: &str, errno: &i32, log: &str) -> String {
    let cause = std::io::Error::from_raw_os_error(*errno);
    if log.is_empty() {
        format!("cannot {what}: {cause}")
    } else {
        format!(
            "internal error: the kernel verifier rejected the program ebq generated ({what}: {cause}). \
             Every query that binds must load, so this is an ebq bug; please report it with the query \
             and `ebq explain` output.\n--- verifier log (last lines) ---\n{}",
            tail_lines(log, 30)
        )
    }
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Error {
    /// A query error.
    pub fn query(stage: Stage, message: impl Into<String>, span: Option<Span>) -> Error {
        Error::Query(QueryError::new(stage, message, span))
    }

    /// The error as text, with the offending part of `sql` marked by carets.
    pub fn render(&self, sql: &str) -> String {
        match self {
            Error::Query(q) => render_query_error(q, sql),
            Error::Catalog(CatalogError::UnknownEvent { suggestions, .. }) if !suggestions.is_empty() => {
                format!("error: {self}\n  help: did you mean {}?", suggestions.join(", "))
            }
            other => format!("error: {other}"),
        }
    }
}

fn render_query_error(q: &QueryError, sql: &str) -> String {
    let mut out = String::new();
    match q.span {
        Some(span) => {
            out.push_str(&format!("{}: {} at {}:{}\n", q.stage, q.message, span.start.line, span.start.column));
            if let Some(line) = sql.lines().nth(span.start.line.saturating_sub(1) as usize) {
                let width = line.chars().count() as u32;
                let start = span.start.column.clamp(1, width.max(1) + 1);
                let end = if span.end.line == span.start.line && span.end.column > start {
                    span.end.column.min(width + 1)
                } else {
                    start + 1
                };
                let gutter = format!("{} | ", span.start.line);
                out.push_str(&format!("{gutter}{line}\n"));
                // Keep the line's tabs so the caret lines up under them.
                let pad: String =
                    line.chars().take((start - 1) as usize).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
                out.push_str(&" ".repeat(gutter.len()));
                out.push_str(&pad);
                out.push_str(&"^".repeat((end.saturating_sub(start)).max(1) as usize));
                out.push('\n');
            }
        }
        None => out.push_str(&format!("{}: {}\n", q.stage, q.message)),
    }
    if let Some(help) = &q.help {
        out.push_str(&format!("  help: {help}\n"));
    }
    if let Some(fixed) = q.fixed_query(sql) {
        out.push_str(&format!("  fixed: {}\n", fixed.replace('\n', "\n         ")));
    }
    out.pop();
    out
}

/// Result with ebq's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_marks_the_span() {
        let e = Error::query(
            Stage::Bind,
            "unknown column `cout`",
            Some(Span { start: Location { line: 1, column: 12 }, end: Location { line: 1, column: 16 } }),
        );
        let r = e.render("SELECT MAX(cout) FROM syscalls.sys_enter_read");
        assert_eq!(
            r,
            "error: unknown column `cout` at 1:12\n1 | SELECT MAX(cout) FROM syscalls.sys_enter_read\n               ^^^^"
        );
    }
}
