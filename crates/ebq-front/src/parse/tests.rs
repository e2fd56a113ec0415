use super::*;

fn ok(sql: &str) -> Query {
    parse_query(sql).unwrap_or_else(|e| panic!("{sql}: {}", e.render(sql)))
}

fn err(sql: &str) -> (String, Span) {
    match parse_query(sql) {
        Err(Error::Query(q)) => (q.message, q.span.expect("positioned")),
        other => panic!("{sql}: expected a query error, got {other:?}"),
    }
}

const EBQL_ORDER: &str = "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count)
FROM tracepoint/syscalls/sys_enter_pread64
GROUP BY fd, cpu
WHERE pid == 1041370
WINDOW(time, 1000, 1000);";

const SQL_ORDER: &str = "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count)
FROM tracepoint:syscalls:sys_enter_pread64
WHERE pid = 1041370
GROUP BY fd, cpu
WINDOW(time, 1000, 1000)";

#[test]
fn ebql_and_sql_clause_orders_give_the_same_query() {
    let a = ok(EBQL_ORDER);
    let mut b = ok(SQL_ORDER);
    // Spans differ (different text); everything else must not.
    b.from.span = a.from.span;
    b.window.as_mut().unwrap().span = a.window.unwrap().span;
    assert_eq!(format!("{:?}", a.projection), format!("{:?}", b.projection));
    assert_eq!(a.from, b.from);
    assert_eq!(a.selection.as_ref().map(ToString::to_string), b.selection.as_ref().map(ToString::to_string));
    assert_eq!(a.group_by.iter().map(ToString::to_string).collect::<Vec<_>>(), ["fd", "cpu"]);
    assert_eq!(a.window.map(|w| (w.kind, w.size, w.step)), Some((WindowKind::Time, 1000, 1000)));
}

#[test]
fn event_name_span_covers_the_name() {
    let q = ok(EBQL_ORDER);
    assert_eq!(q.from.span.start, Location { line: 2, column: 6 });
    assert_eq!(q.from.span.end, Location { line: 2, column: 43 });
    assert_eq!(q.from.name.to_string(), "tracepoint:syscalls:sys_enter_pread64");
}

#[test]
fn dotted_and_quoted_event_names() {
    assert_eq!(
        ok("SELECT COUNT(*) FROM syscalls.sys_enter_read").from.name.to_string(),
        "tracepoint:syscalls:sys_enter_read"
    );
    assert_eq!(ok("SELECT COUNT(*) FROM \"tracepoint:syscalls:sys_enter_read\" r").from.alias.as_deref(), Some("r"));
}

#[test]
fn count_window_and_two_argument_window() {
    let q = ok("SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(count, 100, 100)");
    assert_eq!(q.window.map(|w| (w.kind, w.size, w.step)), Some((WindowKind::Count, 100, 100)));
    let q = ok("SELECT COUNT(*) FROM syscalls.sys_enter_read WINDOW(time, 500)");
    assert_eq!(q.window.map(|w| (w.size, w.step)), Some((500, 500)));
}

#[test]
fn join_is_parsed() {
    let q = ok("SELECT COUNT(*) FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid");
    assert_eq!(q.joins.len(), 1);
    assert_eq!(q.joins[0].event.alias.as_deref(), Some("x"));
    assert_eq!(q.joins[0].on.to_string(), "e.tid = x.tid");
}

#[test]
fn errors_are_positioned() {
    let (m, s) = err("SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE");
    assert!(m.contains("Expected"), "{m}");
    assert_eq!(s.start.line, 1);
    let (m, s) = err("SELECT COUNT(*)\nFROM syscalls.sys_enter_read\nWHERE pid = 1 WHERE pid = 2");
    assert_eq!(m, "WHERE appears twice");
    assert_eq!(s.start, Location { line: 3, column: 15 });
    let (m, _) = err("SELECT COUNT(*)");
    assert!(m.starts_with("missing FROM"), "{m}");
    let (m, s) = err("SELECT COUNT(*) FROM bogus:/x:thing");
    assert!(m.contains("unknown probe type"), "{m}");
    assert_eq!(s.start.column, 22);
    let (_, s) = err("SELECT 'abc FROM x.y");
    assert_eq!(s.start.column, 8);
    let (m, _) = err("SELECT COUNT(*) FROM a.b WINDOW(hour, 1, 1)");
    assert!(m.starts_with("expected WINDOW("), "{m}");
    let (m, _) = err("SELECT COUNT(*) FROM a.b WINDOW(time, 0, 1)");
    assert!(m.contains("from 1"), "{m}");
    let (m, _) = err("SELECT COUNT(*) FROM a.b; SELECT 1");
    assert!(m.contains("only one query"), "{m}");
}

#[test]
fn deep_nesting_and_huge_input_are_refused_cleanly() {
    let deep = format!("SELECT COUNT(*) FROM a.b WHERE {}1{}", "(".repeat(500), ")".repeat(500));
    assert!(parse_query(&deep).is_err());
    let huge = format!("SELECT COUNT(*) FROM a.b WHERE pid = {}", "1".repeat(MAX_QUERY_BYTES));
    assert!(parse_query(&huge).is_err());
}

#[test]
fn split_position_reads_sqlparser_messages() {
    let (m, at) = split_position("Expected: an expression, found: EOF at Line: 2, Column: 7");
    assert_eq!(m, "Expected: an expression, found: EOF");
    assert_eq!(at, Some(Location { line: 2, column: 7 }));
}

#[test]
fn window_is_never_a_column_alias() {
    let q = ok("SELECT COUNT(*) WINDOW(time, 10) FROM a.b");
    assert_eq!(q.window.map(|w| w.size), Some(10));
    assert!(parse_query("SELECT fd WINDOW, COUNT(*) FROM a.b").is_err());
}

#[test]
fn as_as_and_empty_aliases_are_positioned_errors() {
    let (m, s) = err("SELECT fd AS AS FROM syscalls.sys_enter_read");
    assert!(m.starts_with("expected an alias after AS, found AS"), "{m}");
    assert_eq!((s.start.column, s.end.column), (14, 16));
    let (m, s) = err("SELECT fd AS \"\" FROM syscalls.sys_enter_read");
    assert_eq!(m, "an alias cannot be empty");
    assert_eq!(s.start.column, 14);
    // Quoted, AS is a name like any other.
    ok("SELECT fd AS \"AS\" FROM syscalls.sys_enter_read");
}

#[test]
fn parenthesized_star_is_an_error_but_count_star_is_not() {
    let (m, s) = err("SELECT (*) FROM syscalls.sys_enter_read");
    assert_eq!(m, "`*` cannot be parenthesized: write `*` or COUNT(*)");
    assert_eq!(s.start.column, 9);
    assert!(err("SELECT fd, (*) FROM syscalls.sys_enter_read").0.contains("parenthesized"));
    ok("SELECT COUNT(*) FROM syscalls.sys_enter_read");
    ok("SELECT * FROM syscalls.sys_enter_read");
    ok("SELECT fd, count * (fd) FROM syscalls.sys_enter_read");
}

#[test]
fn too_many_nots_say_nesting_is_too_deep_at_the_first_one_too_many() {
    let nots = |n: usize| format!("SELECT fd FROM syscalls.sys_enter_read WHERE {}fd = 1", "NOT ".repeat(n));
    ok(&nots(checks::MAX_PREFIX_RUN));
    let (m, s) = err(&nots(60));
    assert_eq!(m, format!("expression nested too deeply (the limit is {} levels)", checks::MAX_PREFIX_RUN));
    // "SELECT fd FROM syscalls.sys_enter_read WHERE " is 45 characters; the first NOT too many follows MAX_PREFIX_RUN × "NOT ".
    assert_eq!(s.start.column as usize, 46 + 4 * checks::MAX_PREFIX_RUN);
    assert!(err(&format!("SELECT fd FROM a.b WHERE {}1", "- ".repeat(80))).0.contains("nested too deeply"));
    let parens = |n: usize| format!("SELECT fd FROM a.b WHERE {}1{}", "(".repeat(n), ")".repeat(n));
    ok(&parens(checks::MAX_PREFIX_RUN));
    assert!(err(&parens(checks::MAX_PREFIX_RUN + 1)).0.contains("nested too deeply"));
}

#[test]
fn a_comma_in_from_names_the_second_stream_of_a_join() {
    let q = ok(
        "SELECT a.fd FROM syscalls.sys_enter_read a, syscalls.sys_exit_read AS b WHERE a.tid = b.tid WINDOW(time, 100)",
    );
    assert_eq!(q.from.alias.as_deref(), Some("a"));
    let b = q.stream.expect("second stream");
    assert_eq!(b.alias.as_deref(), Some("b"));
    assert_eq!(b.name.to_string(), "tracepoint:syscalls:sys_exit_read");
    let (message, span) = err("SELECT 1 FROM a.x, b.y, c.z WINDOW(time, 1)");
    assert!(message.contains("two event streams"), "{message}");
    assert_eq!(span.start.column, 23);
}

#[test]
fn a_bpftrace_program_is_answered_with_its_ebq_query() {
    let sql = "tracepoint:syscalls:sys_enter_read { @[comm] = count(); }";
    assert_eq!(
        parse_query(sql).unwrap_err().render(sql),
        format!(
            "syntax error: this is a bpftrace program; ebq reads SQL at 1:1\n1 | {sql}\n    {}\n  \
             help: in ebq: SELECT comm, COUNT(*) FROM tracepoint:syscalls:sys_enter_read GROUP BY comm",
            "^".repeat("tracepoint:syscalls:sys_enter_read".len())
        )
    );
}

#[test]
fn category_colon_name_is_a_tracepoint() {
    assert_eq!(
        ok("SELECT COUNT(*) FROM syscalls:sys_enter_read").from.name.to_string(),
        "tracepoint:syscalls:sys_enter_read"
    );
}
