//! Shipped queries: `queries/*.sql`, built into the binary and run by name
//! (`ebq run biolatency`), each equivalent to the bcc tool it is named after.
//!
//! A query file is plain eBQL. Its first comment line is the description
//! `ebq queries` shows; `-- param: NAME = DEFAULT (help)` lines declare
//! `{NAME}` placeholders that `--set NAME=VALUE` overrides.

/// One shipped query.
pub struct Shipped {
    /// The name `ebq run` takes.
    pub name: &'static str,
    /// The file's text.
    pub text: &'static str,
}

macro_rules! shipped {
    ($($name:literal),* $(,)?) => {
        &[$(Shipped { name: $name, text: include_str!(concat!("../../../queries/", $name, ".sql")) }),*]
    };
}

/// Every shipped query, in the order `ebq queries` lists them.
pub const QUERIES: &[Shipped] = shipped![
    "biolatency",
    "biolatency-disk",
    "biolatency-queued",
    "biolatency-flags",
    "biosnoop-summary",
    "vfsstat",
    "filetop",
    "fsslower",
    "fs-histograms",
    "syscount",
    "syscount-process",
    "syscount-latency",
    "cache-reads",
    "cache-misses",
    "cache-readahead",
    "cache-dirtied",
    "cachestat",
    "cachetop",
    "mmap-faults",
    "mmap-faultaround",
    "mmap-file-faults",
    "offcputime",
    "runqlat",
    "cpudist",
    "pg-relation-reads",
];

/// A declared parameter: name, default, help.
struct Param<'a> {
    name: &'a str,
    default: &'a str,
    help: &'a str,
}

impl Shipped {
    /// The leading comment's first sentence, without `-- NAME:`: it may run
    /// over several comment lines (vfsstat's does), so it is read up to the
    /// line that ends it, never cut at the first line's end.
    pub fn description(&self) -> String {
        let mut sentence: Vec<&str> = vec![];
        for line in self.text.lines() {
            let Some(words) = line.trim_start().strip_prefix("--").map(str::trim) else { break };
            if words.starts_with("param:") {
                break;
            }
            sentence.push(words);
            if words.ends_with('.') {
                break;
            }
        }
        let sentence = sentence.join(" ");
        let named = format!("{}: ", self.name);
        sentence.strip_prefix(&named).unwrap_or(&sentence).to_string()
    }
}

/// Words of `text` in lines of at most `width` columns (a word longer than
/// that stands alone), every line after the first indented by `indent`.
fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut column = 0;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if column > 0 && column + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            column = 0;
        } else if column > 0 {
            out.push(' ');
            column += 1;
        }
        out.push_str(word);
        column += len;
    }
    out
}

/// The terminal's width in columns when stdout is one (else `COLUMNS`, else 100).
fn terminal_width() -> usize {
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes a winsize into the struct it is given.
    if unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0 && size.ws_col > 0 {
        return size.ws_col as usize;
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).filter(|&c| c > 0).unwrap_or(100)
}

/// Finds a shipped query by name.
pub fn find(name: &str) -> Option<&'static Shipped> {
    QUERIES.iter().find(|q| q.name == name)
}

fn params(text: &str) -> Vec<Param<'_>> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("-- param:"))
        .filter_map(|p| {
            let (name, rest) = p.split_once('=')?;
            let rest = rest.trim();
            let (default, help) = match rest.split_once(" (") {
                Some((d, h)) => (d.trim(), h.trim_end_matches(')')),
                None => (rest, ""),
            };
            Some(Param { name: name.trim(), default, help })
        })
        .collect()
}

/// The query text with its `{NAME}` placeholders filled from `--set`
/// assignments, else their defaults. Values must be plain numbers or words
/// (or, for a parameter whose default is an absolute path, a path: `/` too),
/// so a parameter can never change the query's shape.
pub fn instantiate(text: &str, set: &[String]) -> Result<String, String> {
    let declared = params(text);
    let mut out = text.to_string();
    for s in set {
        let Some((name, value)) = s.split_once('=') else {
            return Err(format!("error: --set takes NAME=VALUE, got `{s}`"));
        };
        if !declared.iter().any(|p| p.name == name) {
            let names: Vec<&str> = declared.iter().map(|p| p.name).collect();
            return Err(format!(
                "error: this query has no parameter `{name}`{}",
                if names.is_empty() { String::new() } else { format!(" (it has: {})", names.join(", ")) }
            ));
        }
        let path = declared.iter().any(|p| p.name == name && p.default.starts_with('/'));
        let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.' || (path && c == '/');
        if value.is_empty() || !value.chars().all(plain) {
            let what = if path { "a path of plain words" } else { "a number or a plain word" };
            return Err(format!("error: --set {name}: `{value}` must be {what}"));
        }
        out = out.replace(&format!("{{{name}}}"), value);
    }
    for p in &declared {
        out = out.replace(&format!("{{{}}}", p.name), p.default);
    }
    Ok(out)
}

/// `ebq run NAME --interval D` as the bcc tool behaves: each interval shows
/// that interval's events (the tool clears its maps after printing), not the
/// running totals `--interval` prints for an ad-hoc query.
///
/// A query with an `interval_ms` parameter takes D as its window length; a
/// query without WINDOW gets `WINDOW(time, D)`. Both are tumbling windows,
/// cut in the kernel at exact boundaries.
pub fn per_interval(text: &str, set: &mut Vec<String>, seconds: f64) -> Result<String, String> {
    let ms = ((seconds * 1000.0).round() as u64).max(1);
    if params(text).iter().any(|p| p.name == "interval_ms") {
        if set.iter().any(|s| s.starts_with("interval_ms=")) {
            return Err("error: --interval and --set interval_ms both set the window length: give one".into());
        }
        set.push(format!("interval_ms={ms}"));
        return Ok(text.to_string());
    }
    // The comment lines (description, parameters) follow the statement.
    let (comments, sql): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| l.trim_start().starts_with("--"));
    let sql = sql.join("\n");
    let sql = sql.trim_end().trim_end_matches(';');
    if sql.to_ascii_uppercase().contains("WINDOW(") {
        return Err("error: this query sets its own WINDOW; --interval does not apply".into());
    }
    Ok(format!("{sql}\nWINDOW(time, {ms});\n{}\n", comments.join("\n")))
}

/// `ebq queries`: one line per shipped query; with a name, its text and parameters.
pub fn list(name: Option<&str>) -> Result<String, String> {
    match name {
        None => {
            let width = QUERIES.iter().map(|q| q.name.len()).max().unwrap_or(0);
            // Each description whole, wrapped under itself (at least 40 columns for the text).
            let columns = terminal_width();
            let text_width = columns.saturating_sub(width + 2).max(40);
            let mut s: String = QUERIES
                .iter()
                .map(|q| format!("{:<width$}  {}\n", q.name, wrap(&q.description(), text_width, width + 2)))
                .collect();
            let footer =
                "run one with `ebq run NAME [-p PID] [--interval S] [--set PARAM=VALUE]`; `ebq queries NAME` shows it";
            s.push_str(&format!("\n{}\n", wrap(footer, columns.max(40), 0)));
            Ok(s)
        }
        Some(n) => {
            let q = find(n).ok_or_else(|| unknown(n))?;
            let mut s = q.text.to_string();
            for p in params(q.text) {
                s.push_str(&format!("\nparameter {} = {} {}", p.name, p.default, p.help));
            }
            Ok(s + "\n")
        }
    }
}

/// The error for an unknown query name.
pub fn unknown(name: &str) -> String {
    let names: Vec<&str> = QUERIES.iter().map(|q| q.name).collect();
    format!("error: `{name}` is neither a file nor a shipped query\n  help: shipped queries: {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_take_defaults_or_set_values() {
        let q = find("syscount").unwrap();
        assert!(instantiate(q.text, &[]).unwrap().contains("LIMIT 10;"));
        assert!(instantiate(q.text, &["top=3".into()]).unwrap().contains("LIMIT 3;"));
        assert!(instantiate(q.text, &["top=3; DROP".into()]).unwrap_err().contains("plain word"));
        assert!(instantiate(q.text, &["nope=1".into()]).unwrap_err().contains("it has: top"));
        assert!(instantiate(q.text, &["top=/3".into()]).unwrap_err().contains("plain word"));
        let pg = find("pg-relation-reads").unwrap();
        assert!(instantiate(pg.text, &[]).unwrap().contains("usdt:/usr/lib/postgresql/15/bin/postgres:smgr"));
        let other = instantiate(pg.text, &["postgres=/opt/pg16/bin/postgres".into()]).unwrap();
        assert!(other.contains("JOIN usdt:/opt/pg16/bin/postgres:smgr__md__read__done d"));
        assert!(instantiate(pg.text, &["postgres=/a b".into()]).unwrap_err().contains("a path"));
    }

    #[test]
    fn interval_resets_each_interval_as_the_tools_do() {
        let mut set = vec![];
        let sql = per_interval(find("syscount").unwrap().text, &mut set, 0.5).unwrap();
        assert_eq!(
            sql,
            "SELECT syscall_name(id) AS syscall, COUNT(*) AS count\nFROM raw_syscalls.sys_exit\nGROUP BY id\n\
             ORDER BY count DESC\nLIMIT {top}\nWINDOW(time, 500);\n\
             -- syscount: completed system calls by name, most frequent first (bcc syscount, counted at sys_exit).\n\
             -- param: top = 10 (rows shown)\n"
        );
        assert!(instantiate(&sql, &["top=3".into()]).unwrap().contains("LIMIT 3\nWINDOW(time, 500);"));
        assert!(set.is_empty());
        let sql = per_interval(find("vfsstat").unwrap().text, &mut set, 2.0).unwrap();
        assert_eq!(sql, find("vfsstat").unwrap().text);
        assert_eq!(set, ["interval_ms=2000"]);
        assert!(per_interval(find("vfsstat").unwrap().text, &mut set, 2.0).unwrap_err().contains("give one"));
    }

    #[test]
    fn descriptions_are_whole_sentences_wrapped_under_themselves() {
        // vfsstat's first sentence runs over three comment lines (issue 40 item 8).
        let d = find("vfsstat").unwrap().description();
        assert!(d.starts_with("reads, writes, fsyncs"), "{d}");
        assert!(d.ends_with("one program per path."), "{d}");
        assert!(!d.contains("--"), "{d}");
        // A one-line sentence stops at its line; parameters are never part of it.
        assert_eq!(find("syscount").unwrap().description().matches('.').count(), 1);
        assert_eq!(wrap("aa bb cc dd", 5, 2), "aa bb\n  cc dd");
        assert_eq!(wrap("a-very-long-word b", 4, 1), "a-very-long-word\n b");
        for q in QUERIES {
            let d = q.description();
            assert!(d.ends_with('.') || d.ends_with(')'), "{}: {d}", q.name);
        }
    }

    #[test]
    fn every_query_has_a_description_and_no_unfilled_placeholder() {
        for q in QUERIES {
            assert!(!q.description().is_empty(), "{}", q.name);
            let sql = instantiate(q.text, &[]).unwrap();
            let body: String = sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect();
            assert!(!body.contains('{'), "{}: {body}", q.name);
        }
    }
}
