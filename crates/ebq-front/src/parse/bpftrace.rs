//! A bpftrace program given as a query: recognised before tokenizing (SQL's
//! tokenizer has no `@`, `{` or `->`), answered with the equivalent ebq query
//! for the one-liner shapes people bring from bpftrace's tutorial.
//!
//! ```text
//! PROBE [/PREDICATE/] { @NAME[KEYS] = AGG(ARGS); }
//!   →  SELECT KEYS, AGG(ARGS) [AS NAME] FROM PROBE [WHERE PREDICATE] [GROUP BY KEYS]
//! tracepoint:syscalls:sys_enter_read /pid == 42/ { @ = hist(args.count); }
//!   →  SELECT HIST(count) FROM tracepoint:syscalls:sys_enter_read WHERE pid == 42
//! ```
//!
//! `count()`, `sum`, `min`, `max`, `avg`, `hist` and `lhist` map one to one;
//! `args.X` and `args->X` are the column `X`, strings take single quotes, and
//! `&&`, `||` are AND, OR. Anything else (printf, several probes, wildcards,
//! BEGIN/END) is recognised and explained without a translation.

use crate::error::{Error, Location, QueryError, Span, Stage};

/// bpftrace aggregate functions and their ebq names.
const AGGREGATES: [(&str, &str); 7] = [
    ("count", "COUNT"),
    ("sum", "SUM"),
    ("min", "MIN"),
    ("max", "MAX"),
    ("avg", "AVG"),
    ("hist", "HIST"),
    ("lhist", "LHIST"),
];

/// The error for `text` when it is a bpftrace program, else `None`.
pub(super) fn recognise(text: &str) -> Option<Error> {
    let lead = text.len() - text.trim_start().len();
    let body = text.trim_start();
    let probe_len = body.find(|c: char| c.is_whitespace() || c == '/' || c == '{').unwrap_or(body.len());
    let probe = &body[..probe_len];
    let is_probe = matches!(probe, "BEGIN" | "END")
        || probe
            .split_once(':')
            .is_some_and(|(kind, _)| !kind.is_empty() && kind.chars().all(|c| c.is_ascii_alphabetic()));
    if !is_probe || !body.contains('{') {
        return None;
    }
    let start = location_of(text, lead);
    let span = Span { start, end: Location { column: start.column + probe.chars().count() as u32, ..start } };
    let help = match translate(probe, body[probe_len..].trim()) {
        Some(query) => format!("in ebq: {query}"),
        None => "ebq reads one SQL query: SELECT the map's keys and an aggregate (COUNT(*), SUM, MIN, MAX, AVG, HIST, \
                 LHIST) FROM the probe WHERE the /predicate/ GROUP BY the keys; a query without aggregates prints \
                 every event"
            .to_string(),
    };
    Some(Error::Query(
        QueryError::new(Stage::Parse, "this is a bpftrace program; ebq reads SQL", Some(span)).with_help(help),
    ))
}

/// The ebq query for `probe` followed by `rest` (`[/pred/] { @m[k] = f(x); }`).
fn translate(probe: &str, rest: &str) -> Option<String> {
    if probe.contains(['*', ',']) || matches!(probe, "BEGIN" | "END") {
        return None;
    }
    let (predicate, block) = match rest.strip_prefix('/') {
        Some(r) => {
            let (p, b) = r.split_once('/')?;
            (Some(expression(p.trim())), b.trim())
        }
        None => (None, rest),
    };
    let statement = block.strip_prefix('{')?.strip_suffix('}')?.trim().trim_end_matches(';').trim();
    let (map, call) = statement.split_once('=')?;
    let map = map.trim().strip_prefix('@')?;
    let (name, keys) = match map.split_once('[') {
        Some((name, k)) => (name, split_top_level(k.strip_suffix(']')?).into_iter().map(expression).collect()),
        None => (map, vec![]),
    };
    let (function, args) = call.trim().strip_suffix(')')?.split_once('(')?;
    let function = AGGREGATES.iter().find(|(b, _)| *b == function.trim())?.1;
    let args = if function == "COUNT" { "*".to_string() } else { expression(args) };
    let alias = if name.is_empty() { String::new() } else { format!(" AS {name}") };
    let mut query = String::from("SELECT ");
    for k in &keys {
        query += &format!("{k}, ");
    }
    query += &format!("{function}({args}){alias} FROM {probe}");
    if let Some(p) = predicate {
        query += &format!(" WHERE {p}");
    }
    if !keys.is_empty() {
        query += &format!(" GROUP BY {}", keys.join(", "));
    }
    Some(query)
}

/// A bpftrace expression in ebq's spelling.
fn expression(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text.trim();
    while let Some(c) = rest.chars().next() {
        let (piece, len): (String, usize) = if let Some(r) = rest.strip_prefix("args.").or(rest.strip_prefix("args->"))
        {
            (String::new(), rest.len() - r.len())
        } else if rest.starts_with("&&") {
            ("AND".into(), 2)
        } else if rest.starts_with("||") {
            ("OR".into(), 2)
        } else if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            (format!("'{}'", rest[1..end].trim_end_matches('"')), end)
        } else {
            (c.to_string(), c.len_utf8())
        };
        out += &piece;
        rest = &rest[len..];
    }
    out
}

/// `a, f(b, c)` → `["a", "f(b, c)"]`.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut from) = (vec![], 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(text[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(text[from..].trim());
    parts
}

/// The 1-based line/column of byte `offset`.
fn location_of(text: &str, offset: usize) -> Location {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32 + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u32 + 1;
    Location { line, column }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message, the help and the span's columns for `text`.
    fn refused(text: &str) -> (String, String, (u32, u32)) {
        match recognise(text) {
            Some(Error::Query(q)) => {
                let s = q.span.expect("positioned");
                (q.message, q.help.expect("help"), (s.start.column, s.end.column))
            }
            other => panic!("{text}: not recognised: {other:?}"),
        }
    }

    #[test]
    fn one_liners_get_their_ebq_query() {
        for (program, query) in [
            (
                "tracepoint:syscalls:sys_enter_read { @[comm] = count(); }",
                "SELECT comm, COUNT(*) FROM tracepoint:syscalls:sys_enter_read GROUP BY comm",
            ),
            (
                "tracepoint:syscalls:sys_enter_read /pid == 42/ { @ = hist(args.count); }",
                "SELECT HIST(count) FROM tracepoint:syscalls:sys_enter_read WHERE pid == 42",
            ),
            ("kretprobe:vfs_read { @bytes = hist(retval); }", "SELECT HIST(retval) AS bytes FROM kretprobe:vfs_read"),
            (
                "t:syscalls:sys_exit_read /args.ret > 0/ { @[comm, pid] = sum(args.ret); }",
                "SELECT comm, pid, SUM(ret) FROM t:syscalls:sys_exit_read WHERE ret > 0 GROUP BY comm, pid",
            ),
            (
                "tracepoint:syscalls:sys_enter_openat /comm == \"dd\" && args->flags != 0/ { @f = lhist(args->flags, 0, 100, 10) }",
                "SELECT LHIST(flags, 0, 100, 10) AS f FROM tracepoint:syscalls:sys_enter_openat WHERE comm == 'dd' AND flags != 0",
            ),
            (
                "kprobe:vfs_read { @[kstack] = count(); }",
                "SELECT kstack, COUNT(*) FROM kprobe:vfs_read GROUP BY kstack",
            ),
        ] {
            let (message, help, _) = refused(program);
            assert_eq!(message, "this is a bpftrace program; ebq reads SQL");
            assert_eq!(help, format!("in ebq: {query}"), "{program}");
            crate::parse::parse_query(query).unwrap_or_else(|e| panic!("{query}: {}", e.render(query)));
        }
    }

    #[test]
    fn other_programs_are_recognised_without_a_translation() {
        for program in [
            "BEGIN { printf(\"hello\\n\"); }",
            "tracepoint:syscalls:sys_enter_* { @[probe] = count(); }",
            "kprobe:vfs_read { printf(\"%d\\n\", pid); }",
        ] {
            let (message, help, _) = refused(program);
            assert_eq!(message, "this is a bpftrace program; ebq reads SQL");
            assert!(help.starts_with("ebq reads one SQL query: SELECT the map's keys"), "{program}: {help}");
        }
    }

    #[test]
    fn the_span_marks_the_probe() {
        let (_, _, columns) = refused("  kretprobe:vfs_read { @ = count(); }");
        assert_eq!(columns, (3, 21));
    }

    #[test]
    fn sql_is_not_taken_for_bpftrace() {
        for sql in ["SELECT COUNT(*) FROM tracepoint:syscalls:sys_enter_read", "tracepoint:a:b", "select {x}"] {
            assert!(recognise(sql).is_none(), "{sql}");
        }
    }
}
