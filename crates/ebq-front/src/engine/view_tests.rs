//! The view rewrite (`parse::view`) over the fixture kernel, through every
//! stage: what it inlines, and where its errors point (always into the
//! user's text).

use crate::catalog::Catalog;
use crate::engine::Engine;
use crate::error::{Error, Location};
use crate::parse::view::inline;
use crate::parse::{parse_query, SelectItem, View};

fn engine() -> Engine {
    Engine::with_catalog(Catalog::fixture())
}

fn err(e: &Engine, sql: &str) -> crate::error::QueryError {
    match e.prepare(sql) {
        Err(Error::Query(q)) => q,
        other => panic!("expected a query error for {sql}, got {:?}", other.map(|p| p.explain())),
    }
}

fn at(line: u32, column: u32) -> Location {
    Location { line, column }
}

#[test]
fn io_ops_parses_with_its_columns() {
    let cat = Catalog::fixture();
    let v = cat.view("io.ops").expect("io.ops is built in");
    let names: Vec<&str> = v.columns.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        names,
        [
            "path",
            "op",
            "pid",
            "tid",
            "comm",
            "cgroup",
            "fs_type",
            "mount_point",
            "file_name",
            "inode",
            "dev",
            "offset",
            "bytes",
            "ret",
            "start",
            "end",
            "latency",
            "call",
            "buf",
            "mount_id",
            "dentry_id"
        ]
    );
}

#[test]
fn inlines_columns_where_and_group_by() {
    let q = parse_query("SELECT op, COUNT(*), SUM(bytes) FROM io.ops WHERE pid = 7 GROUP BY op").unwrap();
    let out = inline(q, Catalog::fixture().views()).unwrap();
    assert_eq!(out.union.len(), 18, "FROM became the view's union");
    let joins: Vec<bool> = out.union.iter().map(|b| b.join.is_some()).collect();
    assert_eq!(
        joins,
        [true, true, true, true, false, false, false, true, true, true, true, true, true, true, true, true, true, true],
        "the mmap faults and fault-arounds are one event each, the rest pairs"
    );
    assert_eq!(out.from.alias.as_deref(), Some("u"));
    let own = out.union[0].selection.as_ref().unwrap().to_string();
    assert!(own.starts_with("e.id IN (syscall_nr('read')"), "{own}");
    assert_eq!(out.selection.unwrap().to_string(), "(pid) = 7");
    assert_eq!(out.group_by[0].to_string(), "(op)");
    assert!(matches!(&out.projection[0], SelectItem::ExprWithAlias { alias, .. } if alias.value == "op"));
}

#[test]
fn a_query_over_io_ops_binds_and_carries_only_what_it_reads() {
    let p = engine().prepare("SELECT op, COUNT(*), SUM(bytes) FROM io.ops WHERE pid = 7 GROUP BY op").unwrap();
    let plan = p.physical.explain();
    let pair = plan.lines().find(|l| l.contains("Pair")).expect("a JOIN");
    assert!(pair.contains("carries [e.id, e.args[2]]"), "{pair}");
    assert!(p.source().contains("ebq_pending"));
}

#[test]
fn unknown_view_column_is_positioned_and_lists_the_columns() {
    let q = err(&engine(), "SELECT fs_type, SUM(bytez) FROM io.ops GROUP BY fs_type");
    assert_eq!(q.message, "view io.ops has no column bytez; its columns are path, op, pid, tid, comm, cgroup, fs_type, mount_point, file_name, inode, dev, offset, bytes, ret, start, end, latency, call, buf, mount_id, dentry_id");
    let span = q.span.unwrap();
    assert_eq!((span.start, span.end), (at(1, 21), at(1, 26)));
}

#[test]
fn every_column_at_once_compiles_the_start_pairs_in_per_cpu_scratch() {
    // The start programs build their pair in a per-CPU slot, not on the stack: the syscall
    // branch's 17 columns (four file-column strings among them) once needed 424 of 400 bytes.
    let cols = Catalog::fixture().view("io.ops").unwrap().columns.iter().map(|(c, _)| c.clone()).collect::<Vec<_>>();
    let p = engine().prepare(&format!("SELECT {} FROM io.ops", cols.join(", "))).unwrap();
    let c = p.source();
    // The syscall branch's pair is built in the thread's storage; the others' in a per-CPU slot.
    assert!(c.contains("struct ebq_stash *s = &tp->pair;"), "{c}");
    assert!(c.contains("struct ebq_stash_1 *s = bpf_map_lookup_elem(&ebq_opening_1, &slot);"), "{c}");
    assert!(c.contains("__builtin_memset(s->"), "scratch strings are zeroed past their NUL: {c}");
}

#[test]
fn a_plan_error_at_a_join_inside_the_view_points_at_the_view_name() {
    let options = crate::plan::PlanOptions { max_pending: 0, ..Default::default() };
    let sql = "SELECT path, COUNT(*) FROM io.ops GROUP BY path";
    let q = err(&engine().with_options(options), sql);
    assert!(q.message.contains("--max-pending"), "{}", q.message);
    let from = sql.find("io.ops").unwrap() as u32 + 1;
    assert_eq!(q.span.unwrap().start, at(1, from));
}

#[test]
fn errors_inside_a_user_view_point_at_its_name_in_the_query() {
    let cat = Catalog::fixture()
        .with_view("my.reads", "SELECT pid, nosuch AS n FROM syscalls.sys_enter_read WHERE fd = 3")
        .unwrap();
    let e = Engine::with_catalog(cat);
    let q = err(&e, "SELECT n FROM my.reads");
    assert!(q.message.contains("nosuch"), "{}", q.message);
    let span = q.span.unwrap();
    assert_eq!((span.start, span.end), (at(1, 15), at(1, 23)));
    let ok = e.prepare("SELECT pid, COUNT(*) FROM my.reads WHERE pid > 1 GROUP BY pid").unwrap();
    assert!(ok.physical.explain().contains("Filter"));
}

#[test]
fn a_view_with_an_aggregate_or_group_by_is_refused() {
    let e = View::parse("my.v", "SELECT COUNT(*) AS n FROM syscalls.sys_enter_read").unwrap_err();
    assert!(e.to_string().contains("aggregate"), "{e}");
    let e = View::parse("my.v", "SELECT pid FROM syscalls.sys_enter_read GROUP BY pid").unwrap_err();
    assert!(e.to_string().contains("cannot have GROUP BY"), "{e}");
    let e = View::parse("myv", "SELECT pid FROM syscalls.sys_enter_read").unwrap_err();
    assert!(e.to_string().contains("CATEGORY.NAME"), "{e}");
}

#[test]
fn a_view_of_a_union_cannot_be_joined() {
    let q = err(&engine(), "SELECT COUNT(*) FROM io.ops o JOIN raw_syscalls.sys_exit x ON o.tid = x.tid");
    assert_eq!(q.message, "view io.ops reads a union; a JOIN side reads a view of one event");
}

#[test]
fn describe_types_every_io_ops_column() {
    let cat = Catalog::fixture();
    let described = crate::bind::describe_view(&cat, cat.view("io.ops").unwrap());
    let shown: Vec<String> = described.iter().map(|(c, t)| format!("{c} {}", t.as_ref().unwrap())).collect();
    assert_eq!(
        shown.join(", "),
        "path string(9), op string(6), pid u32, tid u32, comm string(16), cgroup u64, fs_type string(16), \
         mount_point string(64), file_name string(64), inode u64, dev u32, offset i64, bytes i64, ret i64, \
         start u64, end u64, latency u64, call i64, buf u64, mount_id u32, dentry_id u64"
    );
}

#[test]
fn group_by_and_order_by_may_name_the_querys_own_outputs() {
    let sql = "SELECT fs_type, CASE WHEN op = 'write' THEN 1 ELSE 0 END AS is_write, COUNT(*) AS n FROM io.ops \
               GROUP BY fs_type, is_write ORDER BY n DESC";
    let p = engine().prepare(sql).unwrap();
    let names: Vec<String> = p.logical.schema().iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(names, ["fs_type", "is_write", "n"]);
    // A name that is neither a view column nor an output is still an error at it.
    let q = err(&engine(), "SELECT fs_type, COUNT(*) AS n FROM io.ops GROUP BY fs_type, nope");
    assert!(q.message.starts_with("view io.ops has no column nope"), "{}", q.message);
}

#[test]
fn a_union_branch_reading_io_ops_becomes_one_branch_per_source() {
    let sql = "SELECT path, COUNT(*) FROM (SELECT path, bytes AS n FROM io.ops WHERE path = 'aio' \
               UNION ALL SELECT 'read' AS path, ret AS n FROM syscalls.sys_exit_read) u GROUP BY path";
    let out = inline(parse_query(sql).unwrap(), Catalog::fixture().views()).unwrap();
    assert_eq!(out.union.len(), 19, "io.ops' 18 sources and the plain branch");
    assert_eq!(out.from.alias.as_deref(), Some("u"), "the union keeps the user's alias");
    let names: Vec<&str> = out.union[2].columns.iter().map(|c| c.value.as_str()).collect();
    assert_eq!(names, ["path", "n"], "every branch keeps the user's columns");
    assert_eq!(out.union[2].exprs[0].to_string(), "(('aio'))");
    let own = out.union[2].selection.as_ref().unwrap().to_string();
    assert!(own.ends_with("AND ((('aio')) = 'aio')"), "the source's WHERE and the branch's: {own}");
    let p = engine().prepare(sql).unwrap();
    let plan = p.physical.explain();
    assert!(plan.contains("Union      3 of 19 branches"), "only the aio sources and the read: {plan}");
}

#[test]
fn a_union_branch_reading_a_single_event_view_keeps_its_join_and_where() {
    let cat = Catalog::fixture()
        .with_view("my.reads", "SELECT e.pid AS pid, x.ret AS n FROM syscalls.sys_enter_read e JOIN syscalls.sys_exit_read x ON e.tid = x.tid WHERE e.fd = 3")
        .unwrap();
    let sql = "SELECT SUM(n) FROM (SELECT n FROM my.reads r WHERE r.pid > 1 \
               UNION ALL SELECT ret AS n FROM syscalls.sys_exit_write) u";
    let out = inline(parse_query(sql).unwrap(), cat.views()).unwrap();
    assert_eq!(out.union.len(), 2);
    assert!(out.union[0].join.is_some(), "the view's pair");
    assert_eq!(out.union[0].exprs[0].to_string(), "(x.ret)");
    assert_eq!(out.union[0].selection.as_ref().unwrap().to_string(), "(e.fd = 3) AND ((e.pid) > 1)");
    Engine::with_catalog(cat).prepare(sql).unwrap();
}

#[test]
fn an_unknown_column_of_a_view_in_a_union_branch_points_into_the_branch() {
    let sql =
        "SELECT SUM(n) FROM (SELECT bytez AS n FROM io.ops UNION ALL SELECT ret AS n FROM syscalls.sys_exit_write) u";
    let q = err(&engine(), sql);
    assert!(q.message.starts_with("view io.ops has no column bytez"), "{}", q.message);
    let span = q.span.unwrap();
    assert_eq!((span.start, span.end), (at(1, 28), at(1, 33)));
    let sql = "SELECT COUNT(*) FROM (SELECT pid FROM io.ops o JOIN raw_syscalls.sys_exit x ON o.tid = x.tid \
               UNION ALL SELECT pid FROM syscalls.sys_exit_write) u";
    assert_eq!(err(&engine(), sql).message, "view io.ops cannot be joined; read it alone in its branch");
}

/// A JOIN side may read a view of one event: the side is the view's event
/// under the side's alias, `r.col` its column's definition, and the view's
/// WHERE a condition on that side (a start side's checked before a pair opens).
#[test]
fn a_join_side_reads_a_view_of_one_event() {
    let cat = Catalog::fixture()
        .with_view("my.reads", "SELECT fd AS fd, count AS asked, tid AS tid FROM syscalls.sys_enter_read WHERE fd > 2")
        .unwrap()
        .with_view("my.done", "SELECT x.ret AS got, x.tid AS tid FROM syscalls.sys_exit_read x")
        .unwrap();
    let e = Engine::with_catalog(cat);
    let sql = "SELECT r.fd, SUM(r.asked), SUM(d.got) FROM my.reads r JOIN my.done d ON r.tid = d.tid GROUP BY r.fd";
    let p = e.prepare(sql).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let plan = p.physical.explain();
    assert!(plan.contains("Attach     tracepoint:syscalls:sys_enter_read"), "{plan}");
    assert!(plan.contains("Filter     r.fd > 2 (before a pair opens)"), "{plan}");
    assert!(plan.contains("Pair       on [r.tid = d.tid]"), "{plan}");
    let plain = "SELECT r.fd, SUM(r.count), SUM(d.ret) FROM syscalls.sys_enter_read r \
                 JOIN syscalls.sys_exit_read d ON r.tid = d.tid WHERE r.fd > 2 GROUP BY r.fd";
    let kernel = |plan: &str| plan.lines().filter(|l| l.starts_with("[kernel]")).collect::<Vec<_>>().join("\n");
    let plain = e.prepare(plain).unwrap().physical.explain();
    assert_eq!(kernel(&plan), kernel(&plain), "the view is its definition");
    // A name the view does not have, and a view that pairs events itself.
    let q = err(&e, "SELECT r.pid FROM my.reads r JOIN my.done d ON r.tid = d.tid");
    assert!(q.message.starts_with("view my.reads has no column pid; its columns are fd, asked, tid"), "{}", q.message);
    assert_eq!(q.span.map(|s| s.start), Some(at(1, 10)));
    let q = err(&engine(), "SELECT a.bytes FROM io.ops a JOIN syscalls.sys_exit_read x ON a.tid = x.tid");
    assert_eq!(q.message, "view io.ops reads a union; a JOIN side reads a view of one event");
    assert_eq!(q.span.map(|s| (s.start, s.end)), Some((at(1, 21), at(1, 27))));
}
