//! Every SQL example in the book (`docs/src/**/*.md`) and in README.md binds
//! and plans on this kernel (issue 36 item 6): each statement of a ```sql
//! block, the query of each `ebq … 'SELECT …'` command in a ```sh block and
//! each `sql = "…"` of a ```toml block (an `ebq serve` configuration) goes
//! through `ebq explain`, which must succeed. A ```sql,error block shows a
//! mistake: its first line is `-- error: TEXT`, and `ebq explain` of the
//! rest must fail with TEXT in its message. So an example the engine stops
//! accepting, or an error message that changes, fails here, not in a reader's
//! terminal. Every repository path they (and ARCHITECTURE.md) name must
//! exist. (The one-liner tables are run for real by `one_liners.rs`.)

use crate::common;

use common::ebq_bin;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One thing to check: where it is, the SQL, and the error expected (if any).
#[derive(Debug)]
struct Example {
    place: String,
    sql: String,
    error: Option<String>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The book's chapters (sorted) and README.md.
fn documents() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "md") {
                out.push(p);
            }
        }
    }
    let mut docs = vec![];
    walk(&repo().join("docs/src"), &mut docs);
    docs.push(repo().join("README.md"));
    docs
}

/// The statements of a ```sql block: split at `;` outside string literals
/// and `--` comments; pieces holding only comments are dropped.
fn statements(block: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = block.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => quoted = !quoted,
            '-' if !quoted && chars.peek() == Some(&'-') => {
                cur.push(c);
                for c in chars.by_ref() {
                    cur.push(c);
                    if c == '\n' {
                        break;
                    }
                }
                continue;
            }
            ';' if !quoted => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out.into_iter()
        .filter(|s| s.lines().any(|l| !l.trim().is_empty() && !l.trim_start().starts_with("--")))
        .map(|s| s.trim().to_string())
        .collect()
}

/// Shell words of one command, as sh splits them: '…' literal, "…" with
/// backslash escapes, a backslash outside quotes, and `#` starting a comment;
/// `None` while a quote is still open (the command goes on on the next line).
fn shell_words(line: &str) -> Option<Vec<String>> {
    let mut words = vec![];
    let mut cur: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => w.push(chars.next().unwrap()),
                        c => w.push(c),
                    }
                }
            }
            '\\' => {
                if let Some(c) = chars.next() {
                    cur.get_or_insert_with(String::new).push(c);
                }
            }
            '#' if cur.is_none() => {
                // a comment runs to the end of its line
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            c if c.is_whitespace() => words.extend(cur.take()),
            c => cur.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(cur);
    Some(words)
}

/// The queries of a ```sh block's `ebq` commands: a command goes on past a
/// trailing backslash and while a quote is open.
fn shell_queries(block: &str) -> Vec<String> {
    let mut out = vec![];
    let mut cur = String::new();
    for line in block.lines() {
        if let Some(head) = line.strip_suffix('\\') {
            cur.push_str(head);
            cur.push(' ');
            continue;
        }
        cur.push_str(line);
        let Some(words) = shell_words(&cur) else {
            cur.push('\n');
            continue;
        };
        cur.clear();
        if words.first().is_some_and(|w| w == "ebq") {
            out.extend(words.into_iter().find(|a| a.trim_start().to_ascii_uppercase().starts_with("SELECT")));
        }
    }
    out
}

/// The queries of a ```toml block's `sql = "…"` lines (an `ebq serve`
/// configuration): TOML basic strings, `\"` and `\\` unescaped.
fn toml_queries(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| {
            l.trim_start().strip_prefix("sql")?.trim_start().strip_prefix('=')?.trim_start().strip_prefix('"')
        })
        .map(|rest| {
            let mut sql = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => sql.extend(chars.next()),
                    c => sql.push(c),
                }
            }
            sql
        })
        .collect()
}

/// Every example of one document.
fn examples_of(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(repo()).unwrap_or(path).display().to_string();
    let mut out = vec![];
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else { continue };
        let indent = line.len() - trimmed.len();
        let mut body = String::new();
        for (_, l) in lines.by_ref() {
            if l.trim_start().starts_with("```") {
                break;
            }
            body.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            body.push('\n');
        }
        let place = format!("{name}:{}", n + 1);
        let to_plan = |sql: String| Example { place: place.clone(), sql, error: None };
        match info.trim() {
            "sql" => out.extend(statements(&body).into_iter().map(to_plan)),
            "sh" => out.extend(shell_queries(&body).into_iter().map(to_plan)),
            "toml" => out.extend(toml_queries(&body).into_iter().map(to_plan)),
            "sql,error" => {
                let (first, rest) = body.split_once('\n').unwrap_or((&body, ""));
                let Some(message) = first.trim().strip_prefix("-- error:") else {
                    panic!("{place}: a sql,error block starts with `-- error: TEXT`")
                };
                let error = Some(message.trim().to_string());
                out.push(Example { place, sql: rest.trim().to_string(), error });
            }
            _ => {}
        }
    }
    out
}

#[test]
fn the_splitters_read_the_books_blocks_as_sh_and_sqlparser_would() {
    assert_eq!(
        statements("SELECT 1 FROM a WHERE s = 'x;y';\n-- the kernel's; comment\nSELECT 2 FROM b -- trailing\n"),
        vec!["SELECT 1 FROM a WHERE s = 'x;y'", "-- the kernel's; comment\nSELECT 2 FROM b -- trailing"]
    );
    assert_eq!(statements("-- only a comment;\n"), Vec::<String>::new());
    assert_eq!(
        shell_queries(
            "ebq -c 'dd if=/dev/zero' \\\n    \"SELECT comm FROM x WHERE c = 'a'\"   # note\nls \"SELECT\"\n"
        ),
        vec!["SELECT comm FROM x WHERE c = 'a'"]
    );
    assert_eq!(shell_words(r#"a 'b c' "d \"e\"" f\ g # h"#).unwrap(), vec!["a", "b c", "d \"e\"", "f g"]);
    assert_eq!(shell_words("ebq \"SELECT a\n"), None);
    assert_eq!(
        toml_queries("name = \"q\"\nsql = \"SELECT comm FROM x WHERE s = 'a\\\"b'\"   # note\n# sql = \"SELECT no\"\n"),
        vec!["SELECT comm FROM x WHERE s = 'a\"b'"]
    );
    assert_eq!(shell_queries("ebq \"SELECT a\n   FROM b\"\n"), vec!["SELECT a\n   FROM b"]);
    assert_eq!(
        repository_paths("see `scripts/test.sh`, [x](queries/shipped.md) and crates/ebq-e2e/tests/e2e/NAME.rs."),
        vec!["scripts/test.sh"]
    );
}

#[test]
fn every_sql_example_in_the_book_binds_and_plans() {
    let examples: Vec<Example> = documents().iter().flat_map(|d| examples_of(d)).collect();
    let expected_errors = examples.iter().filter(|e| e.error.is_some()).count();
    let planned = examples.len() - expected_errors;
    // Guards against a parser here that silently finds nothing.
    assert!(planned >= 100, "only {planned} examples found");
    assert!(expected_errors >= 10, "only {expected_errors} error examples found");
    let mut failures = vec![];
    // From a file: an example may start with a `--` comment, which the
    // command line would take for an option.
    let file = std::env::temp_dir().join(format!("ebq-book-{}.sql", std::process::id()));
    for ex in &examples {
        std::fs::write(&file, &ex.sql).unwrap();
        let out = Command::new(ebq_bin()).arg("explain").arg("-f").arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        match (&ex.error, out.status.success()) {
            (None, true) => {}
            (None, false) => failures.push(format!("{}: does not plan:\n{}\n{stderr}", ex.place, ex.sql)),
            (Some(_), true) => failures.push(format!("{}: plans, but the book shows an error:\n{}", ex.place, ex.sql)),
            (Some(msg), false) if stderr.contains(msg.as_str()) => {}
            (Some(msg), false) => failures.push(format!("{}: fails without `{msg}`:\n{}\n{stderr}", ex.place, ex.sql)),
        }
    }
    let _ = std::fs::remove_file(&file);
    eprintln!("book: {planned} examples planned, {expected_errors} failed as shown");
    assert!(failures.is_empty(), "{} of {} examples:\n\n{}", failures.len(), examples.len(), failures.join("\n\n"));
}

/// The repository paths a document names (`crates/…`, `scripts/…`, …), the
/// targets of Markdown links (the book's own chapters) left out, and so is
/// `docs/book/`, what `mdbook build docs` writes (absent from a fresh clone).
fn repository_paths(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        prose.push_str(&rest[..i]);
        rest = rest[i..].split_once(')').map_or("", |(_, after)| after);
    }
    prose.push_str(rest);
    prose
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| {
            ["crates/", "scripts/", "deploy/", "bench/", "queries/", "docs/", "fuzz/"].iter().any(|p| t.starts_with(p))
        })
        .filter(|t| !t.contains("NAME") && !t.starts_with("docs/book/"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_file_the_book_names_exists() {
    let mut docs = documents();
    docs.push(repo().join("ARCHITECTURE.md"));
    let mut missing = vec![];
    let mut named = 0;
    for doc in &docs {
        for path in repository_paths(&std::fs::read_to_string(doc).unwrap()) {
            named += 1;
            if !repo().join(&path).exists() {
                missing.push(format!("{}: {path}", doc.strip_prefix(repo()).unwrap_or(doc).display()));
            }
        }
    }
    assert!(named >= 50, "only {named} paths found");
    assert!(missing.is_empty(), "named but missing:\n{}", missing.join("\n"));
}
