//! Issue 40 item 3: every hint that proposes a query proposes one that binds.
//! Each hint-producing error is run here, and the text it proposes is
//! prepared: the fix [`Engine::prepare`] shows as `fixed:`, or, for a help
//! that names an edit elsewhere in the text (a GROUP BY, a HAVING), that edit
//! written out by hand.

use crate::catalog::Catalog;
use crate::engine::Engine;
use crate::error::{Error, QueryError};

fn engine() -> Engine {
    Engine::with_catalog(Catalog::fixture())
}

fn refused(sql: &str) -> QueryError {
    match engine().prepare(sql) {
        Err(Error::Query(q)) => q,
        other => panic!("expected a query error for {sql}, got {:?}", other.map(|p| p.explain())),
    }
}

/// `sql`'s error has `help` and a fix, and the fixed query prepares.
fn fix_binds(sql: &str, help: &str, fixed: &str) {
    let q = refused(sql);
    assert_eq!(q.help.as_deref(), Some(help), "{sql}");
    assert_eq!(q.fixed_query(sql).as_deref(), Some(fixed), "{sql}");
    engine().prepare(fixed).unwrap_or_else(|e| panic!("the fix of {sql} is refused: {}", e.render(fixed)));
}

/// `sql`'s error has `help`, and the query it describes prepares.
fn help_binds(sql: &str, help: &str, proposed: &str) {
    let q = refused(sql);
    assert_eq!(q.help.as_deref(), Some(help), "{sql}");
    engine().prepare(proposed).unwrap_or_else(|e| panic!("the help of {sql} is refused: {}", e.render(proposed)));
}

const PREAD: &str = "FROM syscalls.sys_enter_pread64";

#[test]
fn a_condition_that_is_a_number_is_compared_with_zero() {
    fix_binds(
        &format!("SELECT COUNT(*) {PREAD} WHERE fd"),
        "compare it, e.g. `fd != 0`",
        &format!("SELECT COUNT(*) {PREAD} WHERE fd != 0"),
    );
}

#[test]
fn a_column_outside_group_by_is_aggregated_or_grouped() {
    let number = format!("SELECT count, COUNT(*) {PREAD} GROUP BY fd");
    let help = "add `GROUP BY count`, or use e.g. MAX(count)";
    fix_binds(&number, help, &format!("SELECT MAX(count), COUNT(*) {PREAD} GROUP BY fd"));
    help_binds(&number, help, &format!("SELECT count, COUNT(*) {PREAD} GROUP BY fd, count"));
    let string = format!("SELECT comm, COUNT(*) {PREAD} GROUP BY fd");
    let help = "add `GROUP BY comm`, or count its values with COUNT(DISTINCT comm)";
    fix_binds(&string, help, &format!("SELECT COUNT(DISTINCT comm), COUNT(*) {PREAD} GROUP BY fd"));
    help_binds(&string, help, &format!("SELECT comm, COUNT(*) {PREAD} GROUP BY fd, comm"));
}

#[test]
fn misspelt_columns_functions_and_names_are_fixed_in_place() {
    fix_binds(&format!("SELECT MAX(cout) {PREAD}"), "did you mean `count`?", &format!("SELECT MAX(count) {PREAD}"));
    fix_binds(&format!("SELECT COUTN(*) {PREAD}"), "did you mean `count`?", &format!("SELECT count(*) {PREAD}"));
    fix_binds(
        "SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE errno_name(ret) = 'ENOENTT'",
        "did you mean 'ENOENT', 'ENONET'?",
        "SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE errno_name(ret) = 'ENOENT'",
    );
    fix_binds(
        "SELECT COUNT(*) FROM syscalls.sys_enter_pred64 WHERE fd = 3",
        "did you mean tracepoint:syscalls:sys_enter_pread64, tracepoint:syscalls:sys_enter_creat, \
         tracepoint:syscalls:sys_enter_read?",
        &format!("SELECT COUNT(*) {PREAD} WHERE fd = 3"),
    );
    fix_binds(
        &format!("SELECT COUNT(*) {PREAD} WHERE comm == \"dd\""),
        "write 'dd'",
        &format!("SELECT COUNT(*) {PREAD} WHERE comm == 'dd'"),
    );
}

#[test]
fn helps_that_move_text_describe_a_query_that_binds() {
    help_binds(
        &format!("SELECT fd, COUNT(*) AS n {PREAD} WHERE n > 2 GROUP BY fd"),
        "move the condition on `n` to HAVING, which filters the groups after aggregation",
        &format!("SELECT fd, COUNT(*) AS n {PREAD} GROUP BY fd HAVING n > 2"),
    );
    let q = refused("SELECT errno_name(ret) FROM raw_syscalls.sys_exit");
    assert!(q.message.contains("GROUP BY `ret` and select errno_name(ret)"), "{q:?}");
    engine().prepare("SELECT errno_name(ret), COUNT(*) FROM raw_syscalls.sys_exit GROUP BY ret").expect("binds");
}

/// A suggestion whose query would be refused is not shown: `count` is a
/// column of the event, but selected beside COUNT(*) without GROUP BY it is
/// the next error, so "did you mean `count`?" would send the user there.
#[test]
fn a_fix_that_would_not_bind_is_not_shown() {
    let sql = format!("SELECT cout, COUNT(*) {PREAD} GROUP BY fd");
    let q = refused(&sql);
    assert!(q.message.starts_with("unknown column `cout`"), "{q:?}");
    assert_eq!((q.help, q.fix), (None, None));
}

/// Issue 40 item 6: where `str_at_exit()` cannot pair an entry with its
/// exit, the help proposes what reads the string there, and it binds.
#[test]
fn str_at_exit_where_it_cannot_pair_proposes_what_reads_the_string() {
    fix_binds(
        "SELECT str_at_exit(args[1]) FROM raw_syscalls.sys_enter WHERE id = 257",
        "str() reads it at the event: str(args[1])",
        "SELECT str(args[1]) FROM raw_syscalls.sys_enter WHERE id = 257",
    );
    let join = |name: &str| {
        format!(
            "SELECT {name}, x.ret FROM syscalls.sys_enter_openat e JOIN syscalls.sys_exit_openat x ON e.tid = x.tid"
        )
    };
    fix_binds(&join("str_at_exit(e.filename)"), "read it as the JOIN does: str(e.filename)", &join("str(e.filename)"));
}
