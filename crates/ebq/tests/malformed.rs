//! Malformed-input corpus: thousands of broken queries made by mutating valid
//! ones (token deletion, duplication, swaps, insertions of punctuation and
//! keywords, quote flips, truncation at every position), plus huge literals,
//! deep nesting, unknown functions and type mismatches.
//!
//! `Engine::prepare` (pure: parse, bind, plan, codegen; nothing is loaded)
//! must never panic and must return either
//! `Ok` (a mutation can stay valid: counted) or `Error::Query` with a span
//! inside the text, whose rendering does not panic either. The queries bind
//! against the fixture kernel (no tracefs, no root); the CLI's refusal of
//! non-UTF-8 query files is checked in `crates/ebq-e2e/tests/malformed.rs`.
//! The slowest input is printed, not bounded: on a loaded 2-core machine a
//! 1 s bound failed runs that were otherwise right (issue 35: no timed tests).
//!
//! Run with `cargo test --release -p ebq --test malformed -- --nocapture`.

mod common {
    pub mod rng;
}

use common::rng::Rng;

use ebq::host::FixtureKernel;
use ebq::{Engine, Error, RunningQuery};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Valid queries the mutations start from (all bind on the fixture kernel,
/// and on any x86_64 kernel with the usual tracepoints).
const SEEDS: &[&str] = &[
    "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'dd'",
    "SELECT comm, COUNT(*) AS n, SUM(count) AS total, MIN(count), MAX(count), AVG(count) \
     FROM tracepoint:syscalls:sys_enter_read WHERE comm = 'ebq' GROUP BY comm",
    "SELECT time, pid, tid, uid, gid, comm, cpu, cgroup FROM tracepoint/syscalls/sys_enter_read WHERE comm LIKE 'ba%'",
    "SELECT fd, COUNT(*) FROM syscalls/sys_enter_read GROUP BY fd WHERE fd > 2 WINDOW(time, 1000, 1000)",
    "SELECT fd, count * 2 + 1 AS c2, (fd + 100) / 3 AS q, fd % 3, -fd, fd ^ 1, fd | 8, fd & 1, fd << 4, fd >> 1 \
     FROM syscalls.sys_enter_read WHERE count - 2 = -1",
    "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE NOT (fd BETWEEN 0 AND 2) AND count NOT BETWEEN 2 AND 100 \
     AND fd IN (3, 4, 5) AND fd NOT IN (0, 1) AND (count = 1) = TRUE",
    "SELECT r.fd, COUNT(*) AS n FROM syscalls.sys_enter_read AS r WHERE r.comm = 'x' AND sys_enter_read.count = 1 \
     GROUP BY r.fd",
    "SELECT id, args[0], args[5] FROM raw_syscalls.sys_enter WHERE id IN (0, 17) AND args[2] = 1",
    "SELECT prev_comm, next_comm, COUNT(*) FROM sched.sched_switch WHERE prev_comm != 'swapper/0' \
     AND next_comm NOT LIKE 'kworker%' GROUP BY prev_comm, next_comm WINDOW(count, 100)",
    "SELECT filename, COUNT(*) FROM sched.sched_process_exec WHERE starts_with(filename, '/usr') GROUP BY filename",
    "select \"order\", count(*) from kmem.mm_page_alloc group by \"order\"",
    "SELECT\n  COUNT(*) AS n, -- every read\n  MAX(time) AS last\nFROM syscalls.sys_enter_read\nWHERE comm = 'a''b'\n\
     GROUP BY fd;",
    "SELECT * FROM syscalls.sys_enter_openat WHERE dfd == -100 /* AT_FDCWD */ AND flags & 3 <> 0",
    "SELECT vec, COUNT(*) FROM irq.softirq_entry GROUP BY vec WINDOW(time, 50)",
    "SELECT bytes_alloc / 64 AS bucket, SUM(bytes_alloc - bytes_req) AS waste FROM kmem.kmalloc WHERE node >= -1 \
     GROUP BY bucket",
];

/// Things to insert or substitute: punctuation, keywords, odd literals.
const INSERTS: &[&str] = &[
    "(",
    ")",
    ",",
    ";",
    ".",
    "*",
    "/",
    "+",
    "-",
    "=",
    "<",
    ">",
    "!",
    "'",
    "\"",
    "[",
    "]",
    "{",
    "}",
    "@",
    "#",
    "$",
    "?",
    ":",
    "\\",
    "|",
    "&",
    "^",
    "%",
    "~",
    "`",
    "::",
    "->",
    "||",
    "==",
    "!=",
    "<>",
    "<=",
    ">=",
    "<<",
    ">>",
    "--",
    "/*",
    "*/",
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP",
    "BY",
    "GROUP BY",
    "WINDOW",
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "LIKE",
    "AS",
    "JOIN",
    "ON",
    "HAVING",
    "ORDER BY",
    "LIMIT",
    "NULL",
    "TRUE",
    "FALSE",
    "CASE",
    "WHEN",
    "END",
    "DISTINCT",
    "ALL",
    "INTERVAL",
    "CAST",
    "EXISTS",
    "IS",
    "ESCAPE",
    "foo(",
    "COUNT(",
    "SUM(",
    "starts_with(",
    "args[",
    "comm",
    "fd",
    "time",
    "1e10",
    "0x1F",
    "''",
    "99999999999999999999999",
    "1.5",
    "X'00'",
    "$1",
    ":name",
    "@x",
    "-1",
    "18446744073709551616",
    "WINDOW(time, 1)",
    "WINDOW(count",
    "tracepoint:",
    "syscalls.",
    "tracepoint/x/y",
    "'%'",
    "'_'",
    "é",
    "☃",
    "\u{200b}",
    "\u{feff}",
    "\t",
    "\n",
    "\r",
    "\u{0}",
    "\u{7f}",
];

/// Splits a query into tokens, white space and comments included, so that
/// joining them gives the text back.
fn tokens(sql: &str) -> Vec<String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = vec![];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        i += 1;
        let at = |j: usize| chars.get(j).copied().unwrap_or('\0');
        if c.is_whitespace() {
            while i < chars.len() && chars[i].is_whitespace() {
                i += 1;
            }
        } else if c == '\'' || c == '"' {
            while i < chars.len() {
                if chars[i] == c && at(i + 1) == c {
                    i += 2;
                } else if chars[i] == c {
                    i += 1;
                    break;
                } else {
                    i += 1;
                }
            }
        } else if c == '-' && at(i) == '-' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i) == '*' {
            i += 1;
            while i < chars.len() && !(chars[i] == '/' && chars[i - 1] == '*' && i >= start + 3) {
                i += 1;
            }
            i = (i + 1).min(chars.len());
        } else if c.is_ascii_alphanumeric() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else if matches!((c, at(i)), ('<', '=' | '>' | '<') | ('>', '=' | '>') | ('!' | '=', '=')) {
            i += 1;
        }
        out.push(chars[start..i].iter().collect());
    }
    out
}

fn is_blank(t: &str) -> bool {
    t.chars().all(char::is_whitespace)
}

/// One random mutation of a token list.
fn mutate(rng: &mut Rng, toks: &mut Vec<String>) -> &'static str {
    let solid: Vec<usize> = (0..toks.len()).filter(|&i| !is_blank(&toks[i])).collect();
    if solid.is_empty() {
        toks.push(INSERTS[rng.below(INSERTS.len())].to_string());
        return "insert";
    }
    let pick = |rng: &mut Rng| solid[rng.below(solid.len())];
    match rng.below(9) {
        0 => {
            toks.remove(pick(rng));
            "delete"
        }
        1 => {
            let i = pick(rng);
            let t = toks[i].clone();
            toks.insert(i, t);
            "duplicate"
        }
        2 => {
            let k = rng.below(solid.len());
            if k + 1 < solid.len() {
                toks.swap(solid[k], solid[k + 1]);
            }
            "swap adjacent"
        }
        3 => {
            let (a, b) = (pick(rng), pick(rng));
            toks.swap(a, b);
            "swap"
        }
        4 | 5 => {
            let at = rng.below(toks.len() + 1);
            let ins = INSERTS[rng.below(INSERTS.len())];
            let padded = match rng.below(3) {
                0 => ins.to_string(),
                1 => format!(" {ins}"),
                _ => format!(" {ins} "),
            };
            toks.insert(at, padded);
            "insert"
        }
        6 => {
            let i = pick(rng);
            toks[i] = INSERTS[rng.below(INSERTS.len())].to_string();
            "replace"
        }
        7 => {
            // Flip, drop or add a quote.
            let i = pick(rng);
            let t = &toks[i];
            toks[i] = match rng.below(4) {
                0 => t.replace('\'', "\""),
                1 => t.replace('"', "'"),
                2 => t.chars().skip(1).collect(),
                _ => format!("{t}'"),
            };
            "quote"
        }
        _ => {
            // Replace a number with an extreme one, or a name with an unknown one.
            let i = pick(rng);
            let t = &toks[i];
            toks[i] = if t.chars().all(|c| c.is_ascii_digit()) {
                ["18446744073709551616", "-9223372036854775809", "1e308", "0", "00000000000000000000001", "0.5"]
                    [rng.below(6)]
                .to_string()
            } else {
                format!("{t}x")
            };
            "extreme"
        }
    }
}

/// The corpus: mutations, truncations and hand-written extremes.
fn corpus() -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = vec![];
    let mut rng = Rng(0x5eed_0f0e_bc00);
    for seed in SEEDS {
        let base = tokens(seed);
        assert_eq!(base.concat(), *seed, "the tokenizer must round-trip");
        // Truncation at every character.
        for (i, _) in seed.char_indices().skip(1) {
            out.push((seed[..i].to_string(), "truncate"));
        }
        // One to three random mutations, 150 times.
        for _ in 0..150 {
            let mut toks = base.clone();
            let n = 1 + rng.below(3);
            let mut what = "";
            for _ in 0..n {
                what = mutate(&mut rng, &mut toks);
            }
            out.push((toks.concat(), what));
        }
    }
    for sql in extremes() {
        out.push((sql, "extreme"));
    }
    // Known crashers found by fuzzing go here (expected to pass once fixed).
    for sql in FUZZ_FINDINGS {
        out.push((sql.to_string(), "fuzz finding"));
    }
    for sql in long_event_names() {
        out.push((sql, "fuzz finding"));
    }
    out
}

/// Inputs found by the `fuzz/` targets that crashed ebq or got a wrong
/// error; each must now be handled without a panic, with a positioned query
/// error.
const FUZZ_FINDINGS: &[&str] = &[
    // fuzz `mutate` (issue 7): RLIKE/REGEXP are refused with an Error::Query
    // without a span (no caret). Expected to pass once fixed.
    "SELECT rwbs, comm, cmd, dev, sector, nr_sector, bytes FROM block.block_rq_issue WHERE (time, 10)rLIKE 'W%'",
    "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm RLIKE 'W%'",
    "SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm NOT REGEXP 'a'",
    // fuzz `mutate` (issue 7): an event-name component over 255 bytes gave
    // Error::Catalog(Io: File name too long) from fixture directories
    // (tracefs itself answers ENOENT, so this passes on a live kernel).
    "SELECT kOUNT(*) FROM syscalls.s------------------------------------------------------------------------------\
     ---------------------------------------------------------------------------------------------------------------\
     -------------------------------------------------------------------------------------------ys0_enter_p",
];

const READ: &str = "syscalls.sys_enter_read";

/// Long event names, found after fuzzing: the unknown-event suggestion scan
/// takes ~1.4 ms per character of the name (4,000 characters: ~5 s), and a
/// name longer than PATH_MAX gets `Error::Catalog(Io: File name too long)`
/// instead of an unknown-event query error. Expected to pass once fixed.
fn long_event_names() -> Vec<String> {
    vec![
        format!("SELECT COUNT(*) FROM syscalls.{}", "a".repeat(4_000)),
        format!("SELECT COUNT(*) FROM {}.{}", "b".repeat(2_000), "a".repeat(2_000)),
        format!("SELECT COUNT(*) FROM syscalls.{}", "a".repeat(10_000)),
        format!("SELECT COUNT(*) FROM tracepoint/{}/x", "c".repeat(5_000)),
    ]
}

/// Hand-written extremes: huge literals, deep nesting, long lists, unknown
/// functions, type mismatches, odd characters, empty input.
fn extremes() -> Vec<String> {
    let w = |cond: &str| format!("SELECT COUNT(*) FROM {READ} WHERE {cond}");
    let digits = "9".repeat(100_000);
    let mut v = vec![
        // Empty and nearly empty.
        String::new(),
        " ".into(),
        ";".into(),
        "\n\n\n".into(),
        "-- only a comment".into(),
        "/* unterminated".into(),
        "'unterminated".into(),
        "\"unterminated".into(),
        "SELECT".into(),
        "SELECT *".into(),
        "SELECT * FROM".into(),
        "SELECT * FROM ;".into(),
        "FROM syscalls.sys_enter_read".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read; SELECT 1".into(),
        "\u{feff}SELECT COUNT(*) FROM syscalls.sys_enter_read".into(),
        "SELECT\rCOUNT(*)\rFROM\rsyscalls.sys_enter_read\rWHERE\rfd ==\r'x'".into(),
        // Huge literals.
        w(&format!("fd = {digits}")),
        w(&format!("fd = -{digits}")),
        w("fd = 18446744073709551616"),
        w("fd = 18446744073709551615 + 1"),
        w("fd = -9223372036854775809"),
        w("fd = 1e400"),
        w("fd = 0.000000000000000000000000001"),
        w("fd = 0x7fffffffffffffffffffffff"),
        w(&format!("comm = '{}'", "x".repeat(200_000))),
        w(&format!("comm LIKE '{}%'", "y".repeat(5_000))),
        format!("SELECT COUNT(*) FROM {READ} WINDOW(time, {digits})"),
        format!("SELECT COUNT(*) FROM {READ} WINDOW(count, 1, {digits})"),
        format!("SELECT COUNT(*) FROM {READ} WINDOW(time, 18446744073709551616)"),
        format!("SELECT args[{digits}] FROM raw_syscalls.sys_enter"),
        "SELECT args[65536] FROM raw_syscalls.sys_enter".into(),
        "SELECT args[4294967296] FROM raw_syscalls.sys_enter".into(),
        "SELECT args[1 + 1] FROM raw_syscalls.sys_enter".into(),
        "SELECT args[0][0] FROM raw_syscalls.sys_enter".into(),
        "SELECT args[0:2] FROM raw_syscalls.sys_enter".into(),
        "SELECT e.args[0] FROM raw_syscalls.sys_enter e".into(),
        // Deep nesting.
        w(&format!("{}fd = 1{}", "(".repeat(5_000), ")".repeat(5_000))),
        w(&format!("{}fd = 1", "(".repeat(9_000))),
        w(&format!("{}fd = 1", "NOT ".repeat(5_000))),
        w(&format!("fd = {}1", "- ".repeat(5_000))),
        w(&format!("fd = {}1", "+ ".repeat(5_000))),
        w(&format!("fd = {}1{}", "abs(".repeat(3_000), ")".repeat(3_000))),
        w(&format!("fd = {}1{}", "-(".repeat(3_000), ")".repeat(3_000))),
        w(&format!("fd = {}0{}", "args[".repeat(2_000), "]".repeat(2_000))),
        format!("SELECT {}fd{} FROM {READ}", "MAX(".repeat(2_000), ")".repeat(2_000)),
        format!("SELECT {}fd{} FROM {READ}", "COUNT(".repeat(3), ")".repeat(3)),
        w(&format!("fd IN ({})", "(".repeat(2_000))),
        w(&format!("fd = {}", "CASE WHEN ".repeat(2_000))),
        // Long flat expressions near and over the limits.
        w(&format!("fd = {}", vec!["1"; 4_999].join(" + "))),
        w(&format!("fd = {}", vec!["fd"; 4_999].join(" * "))),
        w(&vec!["fd = 1"; 2_000].join(" AND ")),
        w(&vec!["fd = 1"; 2_000].join(" OR ")),
        w(&format!("fd IN ({})", vec!["1"; 256].join(", "))),
        w(&format!("fd IN ({})", vec!["1"; 257].join(", "))),
        w(&format!("fd IN ({})", vec!["1"; 9_000].join(","))),
        w(&format!("comm IN ({})", vec!["'a'"; 300].join(", "))),
        w(&format!("fd = {}", vec!["1"; 20_000].join("+"))),
        format!("SELECT {} FROM {READ}", vec!["fd"; 3_000].join(", ")),
        format!("SELECT {} FROM {READ}", (0..500).map(|i| format!("SUM(fd + {i})")).collect::<Vec<_>>().join(", ")),
        format!(
            "SELECT COUNT(*) FROM {READ} GROUP BY {}",
            (0..200).map(|i| format!("fd + {i}")).collect::<Vec<_>>().join(", ")
        ),
        format!("SELECT COUNT(*) FROM sched.sched_switch GROUP BY {}", vec!["prev_comm, next_comm"; 20].join(", ")),
        format!("SELECT {} FROM sched.sched_switch", vec!["prev_comm"; 500].join(", ")),
        // Unknown functions and bad calls.
        w("foo(fd) = 1"),
        w("lower(comm) = 'x'"),
        w("COUNT(*) = 1"),
        w("starts_with(comm)"),
        w("starts_with(comm, 'a', 'b')"),
        w("starts_with('a', comm)"),
        w("starts_with(comm, comm)"),
        w("starts_with(comm, 'a%')"),
        w("starts_with(*, 'a')"),
        w("starts_with(comm => 'a')"),
        format!("SELECT COUNT(*, fd) FROM {READ}"),
        format!("SELECT COUNT(DISTINCT fd) FROM {READ}"),
        format!("SELECT COUNT(ALL fd) FROM {READ}"),
        format!("SELECT SUM() FROM {READ}"),
        format!("SELECT AVG(comm) FROM {READ}"),
        format!("SELECT MIN(fd = 1) FROM {READ}"),
        format!("SELECT MAX(*) FROM {READ}"),
        format!("SELECT SUM(fd) FILTER (WHERE fd = 1) FROM {READ}"),
        format!("SELECT SUM(fd) OVER () FROM {READ}"),
        format!("SELECT COUNT(*) + COUNT(*) FROM {READ}"),
        format!("SELECT -COUNT(*) FROM {READ}"),
        format!("SELECT (COUNT(*)) FROM {READ}"),
        format!("SELECT NOT COUNT(*) FROM {READ}"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY COUNT(*)"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY 1"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY *"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY ()"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY ROLLUP (fd)"),
        format!("SELECT COUNT(*) FROM {READ} GROUP BY ALL"),
        format!("SELECT fd.* FROM {READ}"),
        format!("SELECT {READ}.* FROM {READ}"),
        format!("SELECT * EXCEPT (fd) FROM {READ}"),
        format!("SELECT DISTINCT fd FROM {READ}"),
        format!("SELECT TOP 10 fd FROM {READ}"),
        // Type mismatches.
        w("comm + 1 = 2"),
        w("fd = 'x'"),
        w("comm < 'a'"),
        w("comm = comm"),
        w("comm = prev_comm"),
        w("TRUE + 1 = 2"),
        w("fd AND 1"),
        w("NOT comm"),
        w("comm BETWEEN 'a' AND 'b'"),
        w("fd LIKE 'a%'"),
        w("comm IN (1, 'a')"),
        w("comm IN ('a', fd)"),
        w("-comm = 1"),
        w("comm[0] = 1"),
        w("comm LIKE 'a' ESCAPE '!'"),
        w("comm ILIKE 'a%'"),
        w("comm SIMILAR TO 'a'"),
        w("comm = 'a' COLLATE \"C\""),
        w("fd = TRUE"),
        w("fd IS TRUE"),
        w("fd IS NOT NULL"),
        w("fd = NULL"),
        w("fd = ?"),
        w("fd = $1"),
        w("fd = :x"),
        w("fd = @x"),
        w("fd = DATE '2020-01-01'"),
        w("fd = INTERVAL '1 day'"),
        w("fd = CAST(1 AS INT)"),
        w("fd::int = 1"),
        w("fd = (SELECT 1)"),
        w("EXISTS (SELECT 1)"),
        w("fd = ANY (1, 2)"),
        w("(fd, count) = (1, 2)"),
        w("fd = [1, 2]"),
        w("fd = {'a': 1}"),
        w("fd = CASE WHEN fd = 1 THEN 2 ELSE 3 END"),
        w("fd = E'\\x41'"),
        w("fd = N'x'"),
        w("fd = B'101'"),
        w("fd = X'ff'"),
        w("fd = 1 AND"),
        w("AND fd = 1"),
        w("fd = = 1"),
        w("fd =="),
        w("fd << "),
        w("fd >>> 1 = 0"),
        w("fd <=> 1"),
        w("fd !== 1"),
        w("fd === 1"),
        w("fd DIV 2 = 1"),
        w("fd ** 2 = 1"),
        w("fd # 2 = 1"),
        w("fd ~ 'a'"),
        w("~fd = 1"),
        w("!fd"),
        w("fd = 1 -- trailing\n AND"),
        // Events and clauses.
        "SELECT COUNT(*) FROM tracepoint:syscalls:sys_enter_read:extra".into(),
        "SELECT COUNT(*) FROM tracepoint::".into(),
        "SELECT COUNT(*) FROM :".into(),
        "SELECT COUNT(*) FROM /".into(),
        "SELECT COUNT(*) FROM //".into(),
        "SELECT COUNT(*) FROM a/b/c/d".into(),
        "SELECT COUNT(*) FROM ../../etc.passwd".into(),
        "SELECT COUNT(*) FROM syscalls/../syscalls/sys_enter_read".into(),
        "SELECT COUNT(*) FROM \"syscalls/../../x\"".into(),
        "SELECT COUNT(*) FROM \"\"".into(),
        "SELECT COUNT(*) FROM \"a\u{0}b.c\"".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read AS".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read AS AS".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read AS \"\"".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read e e".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read, sched.sched_switch".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read FROM syscalls.sys_enter_read".into(),
        "SELECT COUNT(*) FROM (SELECT 1)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read JOIN".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read JOIN sched.sched_switch".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read INNER".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW()".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time,)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time, 1,)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time, 1, 1, 1)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time, 1.5)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time, '1')".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW w AS (PARTITION BY fd)".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read GROUP".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read GROUP BY".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read ORDER".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read LIMIT".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read LIMIT -1".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read LIMIT 99999999999999999999999".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read HAVING".into(),
        "SELECT COUNT(*) FROM syscalls.sys_enter_read UNION SELECT COUNT(*) FROM syscalls.sys_enter_read".into(),
        "WITH x AS (SELECT 1) SELECT COUNT(*) FROM syscalls.sys_enter_read".into(),
        "EXPLAIN SELECT COUNT(*) FROM syscalls.sys_enter_read".into(),
        "INSERT INTO x VALUES (1)".into(),
        "DROP TABLE x".into(),
        // Odd characters.
        w("comm = '\u{0}'"),
        w("comm = 'a\u{0}'"),
        w("c\u{0}omm = 'a'"),
        w("comm = '\u{200b}'"),
        w("comm\u{200b} = 'a'"),
        w("comm = '\u{202e}evil'"),
        w("comm = '🦀🦀🦀🦀'"),
        w("comm = '🦀🦀🦀🦀x'"),
        w("comm LIKE '🦀%'"),
        w("comm = 'é' AND fd = 1 ☃"),
        w("\"comm\u{301}\" = 'a'"),
        w("fd = 1\u{85}"),
        w("fd = 1\u{2028}AND fd = 2"),
        w("fd = １"),
        w("fd＝1"),
        w("comm = '*/ int x; /*'"),
        w("comm = '\\'"),
        w("comm = '\\0'"),
        w("comm = '\"'"),
        w("comm = '%s%n'"),
        w("comm = '??='"),
        w(&format!("comm = '{}'", "\\".repeat(15))),
        format!("SELECT COUNT(*) AS \"*/\" FROM {READ}"),
        format!("SELECT COUNT(*) AS \"a\u{0}b\" FROM {READ}"),
        format!("SELECT COUNT(*) AS \"{}\" FROM {READ}", "x".repeat(10_000)),
        format!("SELECT fd AS \"\" FROM {READ}"),
        format!("SELECT fd AS \"🦀\" FROM {READ}"),
        format!("SELECT fd\tAS\tx\tFROM\t{READ}\tWHERE\tcomm\t=\t'\t'"),
    ];
    // Every ASCII control and punctuation character alone and after a valid query.
    for b in 0u8..128 {
        let c = b as char;
        if !c.is_ascii_alphanumeric() {
            v.push(c.to_string());
            v.push(format!("SELECT COUNT(*) FROM {READ} {c}"));
            v.push(format!("SELECT COUNT(*) FROM {READ} WHERE fd {c} 1"));
        }
    }
    v
}

/// Checks one input; `Ok(true)` when it prepared fine.
fn check(engine: &Engine, sql: &str) -> Result<bool, String> {
    let result = catch_unwind(AssertUnwindSafe(|| engine.prepare(sql)))
        .map_err(|p| format!("prepare panicked: {}", panic_message(&*p)))?;
    let err = match result {
        Ok(_) => return Ok(true),
        Err(e) => e,
    };
    let rendered = catch_unwind(AssertUnwindSafe(|| err.render(sql)))
        .map_err(|p| format!("render panicked: {}\nerror: {err:?}", panic_message(&*p)))?;
    let Error::Query(q) = &err else {
        return Err(format!("expected Error::Query, got {err:?}"));
    };
    let Some(span) = q.span else {
        return Err(format!("the error has no span:\n{}", shorten(&rendered)));
    };
    let lines = sql.split('\n').count() as u32;
    if span.start.line == 0 || span.start.line > lines + 1 || span.start.column == 0 {
        return Err(format!("the span {span:?} is outside the text ({lines} lines):\n{}", shorten(&rendered)));
    }
    Ok(false)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

fn shorten(s: &str) -> String {
    if s.chars().count() <= 400 {
        s.to_string()
    } else {
        format!("{}… ({} bytes)", s.chars().take(300).collect::<String>(), s.len())
    }
}

#[test]
fn malformed_queries_never_panic_and_fail_with_positioned_errors() {
    let engine = Engine::with_kernel(FixtureKernel::checked_in());
    let corpus = corpus();
    let t0 = Instant::now();
    let mut failures = vec![];
    let mut still_valid = 0;
    let mut by_kind: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    let mut slowest = (Duration::ZERO, String::new());
    for (sql, kind) in &corpus {
        let t = Instant::now();
        let entry = by_kind.entry(kind).or_default();
        entry.0 += 1;
        match check(&engine, sql) {
            Ok(true) => {
                still_valid += 1;
                entry.1 += 1;
            }
            Ok(false) => {}
            Err(why) => failures.push(format!("[{kind}] query {:?}\n{why}", shorten(sql))),
        }
        if t.elapsed() > slowest.0 {
            slowest = (t.elapsed(), shorten(sql));
        }
    }
    eprintln!(
        "{} malformed inputs in {:.2} s ({still_valid} still valid, {} failures); slowest {:?}: {:?}",
        corpus.len(),
        t0.elapsed().as_secs_f64(),
        failures.len(),
        slowest.0,
        slowest.1
    );
    for (kind, (n, ok)) in &by_kind {
        eprintln!("  {kind:<14} {n:>6} inputs, {ok:>5} still valid");
    }
    assert!(corpus.len() >= 1000, "only {} inputs", corpus.len());
    assert!(
        failures.is_empty(),
        "{} of {} inputs failed:\n\n{}",
        failures.len(),
        corpus.len(),
        failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n\n")
    );
}

/// Not a check: lists the inputs that prepare fine (mutations that stayed
/// valid, accepted extremes) and tries to run the accepted extremes, which
/// is how wrongly accepted queries and queries that bind but do not load
/// were found. Runs them on this kernel: needs root and tracefs.
/// `cargo test --release -p ebq --test malformed -- --ignored --nocapture`
#[test]
#[ignore]
fn report_accepted_inputs() {
    let engine = Engine::new().expect("tracefs must be mounted");
    for (sql, kind) in corpus() {
        if check(&engine, &sql) != Ok(true) {
            continue;
        }
        if kind != "extreme" {
            eprintln!("accepted [{kind}]: {:?}", shorten(&sql));
            continue;
        }
        let run = engine
            .prepare(&sql)
            .and_then(|p| RunningQuery::start(&p, ebq::Scope::All))
            .and_then(|mut q| q.finish().map(|_| ()));
        match run {
            Ok(()) => eprintln!("accepted [{kind}], runs: {:?}", shorten(&sql)),
            Err(e) => eprintln!("accepted [{kind}], FAILS to run: {:?}\n{}", shorten(&sql), shorten(&e.render(&sql))),
        }
    }
}
