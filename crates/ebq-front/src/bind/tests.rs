//! Binding errors a newcomer meets first, asserted as rendered (issue 18):
//! double-quoted strings and SELECT aliases in HAVING and WHERE.

use crate::catalog::Catalog;

fn bind(sql: &str) -> crate::Result<super::LogicalPlan> {
    let cat = Catalog::fixture();
    super::bind(&crate::parse::parse_query(sql)?, &cat)
}

/// The error of `sql` as the CLI prints it.
fn rendered(sql: &str) -> String {
    match bind(sql) {
        Err(e) => e.render(sql),
        Ok(_) => panic!("{sql}: bound"),
    }
}

#[test]
fn a_double_quoted_string_says_strings_take_single_quotes_and_shows_the_fixed_query() {
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm == \"dd\"";
    // The caret line: the gutter `1 | ` and 62 characters before `"dd"`.
    assert_eq!(
        rendered(sql),
        format!(
            "error: unknown column `dd`: double quotes name a column; a string takes single quotes at 1:63\n\
             1 | {sql}\n\
             {}^^^^\n  \
             help: write 'dd'\n  \
             fixed: SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm == 'dd'",
            " ".repeat(4 + 62)
        )
    );
    bind("SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm == 'dd'").expect("the fixed query binds");
    // A double-quoted name that is a column stays a column.
    bind("SELECT \"fd\", COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY \"fd\"").expect("quoted column");
}

#[test]
fn having_takes_select_aliases() {
    let with_alias =
        bind("SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_pread64 GROUP BY comm HAVING n > 10").unwrap();
    let written_out =
        bind("SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_pread64 GROUP BY comm HAVING COUNT(*) > 10").unwrap();
    assert_eq!(format!("{:?}", with_alias.body), format!("{:?}", written_out.body));
    // A column keeps its meaning when an alias has its name: `fd` is the key.
    let shadowed =
        bind("SELECT fd, MAX(count) AS fd2 FROM syscalls.sys_enter_pread64 GROUP BY fd HAVING fd2 > 1 AND fd > 2");
    assert!(shadowed.is_ok(), "{shadowed:?}");
}

#[test]
fn where_takes_plain_aliases_and_refuses_aggregate_ones_saying_why() {
    let with_alias = bind("SELECT count / 1024 AS kb FROM syscalls.sys_enter_pread64 WHERE kb > 4").unwrap();
    let written_out =
        bind("SELECT count / 1024 AS kb FROM syscalls.sys_enter_pread64 WHERE (count / 1024) > 4").unwrap();
    assert_eq!(format!("{:?}", with_alias.filter), format!("{:?}", written_out.filter));
    let sql = "SELECT comm, COUNT(*) AS n FROM syscalls.sys_enter_pread64 WHERE n > 10 GROUP BY comm";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `n` is `COUNT(*)`, an aggregate: WHERE runs per event in the kernel, before anything is aggregated at 1:66\n\
             1 | {sql}\n\
             {}^\n  \
             help: move the condition on `n` to HAVING, which filters the groups after aggregation",
            " ".repeat(4 + 65)
        )
    );
}

#[test]
fn category_colon_name_binds_like_the_other_spellings() {
    let a = bind("SELECT COUNT(*) FROM block:block_rq_issue").unwrap();
    let b = bind("SELECT COUNT(*) FROM tracepoint:block:block_rq_issue").unwrap();
    assert_eq!(a.event.name, b.event.name);
    assert_eq!(a.event.name.to_string(), "tracepoint:block:block_rq_issue");
}

/// Output names of `sql`'s columns.
fn names(sql: &str) -> Vec<String> {
    match bind(sql).unwrap_or_else(|e| panic!("{}", e.render(sql))).body {
        super::QueryBody::Rows { columns } => columns.into_iter().map(|c| c.name).collect(),
        super::QueryBody::Aggregate { columns, .. } => columns.into_iter().map(|c| c.name).collect(),
    }
}

/// Issue 20 item 4 / issue 18 item 8: `i.comm` is output as `comm` unless
/// two output columns would share the name.
#[test]
fn output_names_drop_the_stream_qualifier_unless_ambiguous() {
    let join = "FROM syscalls.sys_enter_pread64 e JOIN syscalls.sys_exit_pread64 x ON e.tid = x.tid";
    assert_eq!(
        names(&format!("SELECT e.comm, e.fd, x.ret, x.time - e.time {join}")),
        ["comm", "fd", "ret", "x.time - e.time"]
    );
    assert_eq!(names(&format!("SELECT e.comm, x.comm, e.fd AS f {join}")), ["e.comm", "x.comm", "f"]);
    assert_eq!(names(&format!("SELECT e.fd, COUNT(*) AS fd {join} GROUP BY e.fd")), ["e.fd", "fd"]);
    assert_eq!(names(&format!("SELECT e.fd, COUNT(*) {join} GROUP BY e.fd")), ["fd", "COUNT(*)"]);
    assert_eq!(names("SELECT fd, count FROM syscalls.sys_enter_pread64"), ["fd", "count"]);
}

/// req_flags() decodes with the bound kernel's enums; the fixture kernel's BTF has
/// none, so binding says which enum is missing instead of guessing the bits.
#[test]
fn req_flags_needs_the_kernels_request_enums() {
    let sql = "SELECT req_flags(c.rq.cmd_flags) AS f, COUNT(*) FROM block.block_rq_issue i \
               JOIN block.block_rq_complete c ON i.rq = c.rq GROUP BY c.rq.cmd_flags";
    let e = rendered(sql);
    assert!(
        e.starts_with(
            "error: req_flags decodes with the kernel's own enums: the kernel's BTF has no enum req_flag_bits at 1:8"
        ),
        "{e}"
    );
    let e = rendered("SELECT COUNT(*) FROM block.block_rq_complete WHERE req_flags(rq.cmd_flags) = 'Write'");
    assert!(e.contains("req_flags() is computed in user space, per group"), "{e}");
}

#[test]
fn io_uring_opcodes_are_named_from_the_kernels_btf() {
    // io_uring_op('READ') is enum_value('io_uring_op', 'IORING_OP_READ'): 22 in the kernel's enum.
    let by_name = bind("SELECT COUNT(*) FROM io_uring.io_uring_submit_req WHERE opcode = io_uring_op('READ')").unwrap();
    let by_enum = bind(
        "SELECT COUNT(*) FROM io_uring.io_uring_submit_req WHERE opcode = enum_value('io_uring_op', 'IORING_OP_READ')",
    )
    .unwrap();
    let by_number = bind("SELECT COUNT(*) FROM io_uring.io_uring_submit_req WHERE opcode = 22").unwrap();
    assert_eq!(format!("{:?}", by_name.filter), format!("{:?}", by_number.filter));
    assert_eq!(format!("{:?}", by_enum.filter), format!("{:?}", by_number.filter));
    let sql = "SELECT COUNT(*) FROM io_uring.io_uring_submit_req WHERE opcode = io_uring_op('REED')";
    let e = rendered(sql);
    assert!(
        e.starts_with(
            "error: `IORING_OP_REED` is not an enumerator of `enum io_uring_op` on this kernel: IORING_OP_NOP, \
             IORING_OP_READV"
        ) && e.contains("(14 in all) at 1:78"),
        "{e}"
    );
    let e = rendered("SELECT COUNT(*) FROM io_uring.io_uring_submit_req WHERE opcode = enum_value('no_such', 'X')");
    assert!(e.starts_with("error: `enum no_such` is not in this kernel's BTF at 1:"), "{e}");
}

/// A JOIN names an array element by its event (`e.args[2]`), as it must
/// when both events have the array.
#[test]
fn a_qualified_array_element_is_the_named_events() {
    let sql = "SELECT e.args[2] AS n, COUNT(*) FROM raw_syscalls.sys_enter e JOIN raw_syscalls.sys_enter x \
               ON e.tid = x.tid WHERE x.args[0] > 2 GROUP BY n";
    let l = bind(sql).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    let join = l.join.as_ref().expect("a JOIN");
    let carried = format!("{:?}", l.body);
    assert!(carried.contains("args[2]") && carried.contains("Start"), "the start's element: {carried}");
    assert!(format!("{:?}", l.filter).contains("args[0]"), "{:?}", l.filter);
    assert_eq!(join.keys.len(), 1);
    // Unqualified, the name is both events': the message says how to qualify it.
    let err = bind(&sql.replace("x.args[0]", "args[0]")).unwrap_err().to_string();
    assert!(err.contains("write e.args or x.args"), "{err}");
}

#[test]
fn a_literal_in_select_distinct_is_a_constant_key_not_a_position() {
    // DISTINCT's keys are its SELECT items: `2` is the number 2. Before, it was
    // then read as GROUP BY position 2 (`fd`), and `1` named itself for ever.
    let keys = |sql: &str| match bind(sql).unwrap_or_else(|e| panic!("{sql}: {e}")).body {
        super::QueryBody::Aggregate { keys, .. } => format!("{keys:?}"),
        other => panic!("{sql}: not an aggregate: {other:?}"),
    };
    let distinct = keys("SELECT DISTINCT 2, fd FROM syscalls.sys_enter_pread64");
    assert!(distinct.starts_with("[Int { value: 2,"), "{distinct}");
    assert_ne!(distinct, keys("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd, fd"));
    keys("SELECT DISTINCT 1, fd FROM syscalls.sys_enter_pread64");
}

/// Issue 40 item 2: a function is resolved before GROUP BY is checked.
#[test]
fn an_unknown_function_is_named_before_group_by_is_checked() {
    let sql = "SELECT comm, foo(ret) FROM raw_syscalls.sys_exit GROUP BY comm, id, ret";
    let e = rendered(sql);
    let head = format!(
        "error: unknown function `foo` at 1:14\n1 | {sql}\n{}^^^\n  help: functions: COUNT",
        " ".repeat(4 + 13)
    );
    assert!(e.starts_with(&head), "{e}");
    assert!(e.contains("errno_name(ret), signal_name(sig)"), "{e}");
    let sql = "SELECT comm, erno_name(ret) FROM raw_syscalls.sys_exit GROUP BY comm, id, ret";
    let e = rendered(sql);
    assert!(e.starts_with("error: unknown function `erno_name` at 1:14"), "{e}");
    assert!(e.contains("help: did you mean `errno_name`"), "{e}");
    // A known function used wrongly says what is wrong, not "must appear in GROUP BY".
    let e = rendered("SELECT comm, syscall_nr(ret) FROM raw_syscalls.sys_exit GROUP BY comm");
    assert!(e.starts_with("error: syscall_nr('name') needs a string literal"), "{e}");
    // A known, well-formed function of an ungrouped column still asks for GROUP BY.
    let e = rendered("SELECT comm, user_u64(ret) FROM raw_syscalls.sys_exit GROUP BY comm");
    assert!(e.contains("must appear in GROUP BY"), "{e}");
}

#[test]
fn errno_and_signal_names_are_numbers_in_the_kernel_and_names_when_printed() {
    use super::{GroupRef, LinuxName, PostExpr, QueryBody};
    let plan = bind("SELECT comm, errno_name(ret) AS err, COUNT(*) FROM raw_syscalls.sys_exit GROUP BY comm, id, ret")
        .unwrap();
    let QueryBody::Aggregate { columns, .. } = &plan.body else { panic!("{:?}", plan.body) };
    assert!(
        matches!(&columns[1].source, PostExpr::LinuxName(LinuxName::Errno, x) if matches!(**x, PostExpr::Ref(GroupRef::Key { index: 2, .. }))),
        "{:?}",
        columns[1].source
    );
    // GROUP BY the name groups by the number.
    let by_name = bind("SELECT errno_name(ret), COUNT(*) FROM raw_syscalls.sys_exit GROUP BY errno_name(ret)").unwrap();
    let by_number = bind("SELECT errno_name(ret), COUNT(*) FROM raw_syscalls.sys_exit GROUP BY ret").unwrap();
    assert_eq!(format!("{:?}", by_name.body), format!("{:?}", by_number.body));
    // WHERE compares the number, in the kernel.
    let named = bind("SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE errno_name(ret) = 'ENOENT'").unwrap();
    let numbered = bind("SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE ret = -2").unwrap();
    assert_eq!(format!("{:?}", named.filter), format!("{:?}", numbered.filter));
    let named = bind("SELECT COUNT(*) FROM sched.sched_process_exit WHERE signal_name(prio) != 'SIGKILL'").unwrap();
    let numbered = bind("SELECT COUNT(*) FROM sched.sched_process_exit WHERE prio != 9").unwrap();
    assert_eq!(format!("{:?}", named.filter), format!("{:?}", numbered.filter));
    let e = rendered("SELECT COUNT(*) FROM raw_syscalls.sys_exit WHERE errno_name(ret) = 'ENOENTT'");
    assert!(e.starts_with("error: `ENOENTT` is not a name errno_name() gives"), "{e}");
    assert!(e.contains("help: did you mean 'ENOENT'"), "{e}");
    // A row query has no groups to name: it says how.
    let e = rendered("SELECT errno_name(ret) FROM raw_syscalls.sys_exit");
    assert!(e.contains("GROUP BY `ret` and select errno_name(ret)"), "{e}");
}

/// Issue 40 item 3: a hint that proposes query text proposes what binds.
#[test]
fn a_missing_group_by_hint_proposes_only_what_binds_for_the_columns_type() {
    let base = "FROM syscalls.sys_enter_pread64 GROUP BY fd";
    let help = |sql: &str| match bind(sql) {
        Err(crate::Error::Query(q)) => q.help,
        other => panic!("{sql}: {other:?}"),
    };
    // A string: MAX is refused, COUNT(DISTINCT …) binds.
    let h = help(&format!("SELECT comm, COUNT(*) {base}")).unwrap();
    assert_eq!(h, "add `GROUP BY comm`, or count its values with COUNT(DISTINCT comm)");
    bind(&format!("SELECT COUNT(DISTINCT comm), COUNT(*) {base}")).expect("the proposed aggregate binds");
    bind("SELECT comm, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd, comm").expect("the proposed key binds");
    assert!(bind(&format!("SELECT MAX(comm), COUNT(*) {base}")).is_err(), "MAX of a string is refused");
    // A number: both proposals bind.
    let h = help(&format!("SELECT count, COUNT(*) {base}")).unwrap();
    assert_eq!(h, "add `GROUP BY count`, or use e.g. MAX(count)");
    bind(&format!("SELECT MAX(count), COUNT(*) {base}")).expect("the proposed aggregate binds");
    // An unknown column says so, not "must appear in GROUP BY".
    let e = rendered(&format!("SELECT cout, COUNT(*) {base}"));
    assert!(e.starts_with("error: unknown column `cout`"), "{e}");
    // WHERE's `x != 0` is proposed for a number only.
    assert_eq!(
        help("SELECT fd FROM syscalls.sys_enter_pread64 WHERE fd").as_deref(),
        Some("compare it, e.g. `fd != 0`")
    );
    assert_eq!(help("SELECT fd FROM syscalls.sys_enter_pread64 WHERE comm"), None);
}

/// EXPLAIN prints an expression as written: parentheses around an operand
/// that is itself an operation, none around the whole.
#[test]
fn expressions_print_with_the_parentheses_they_need() {
    let l = bind("SELECT SUM(count / 1024 + 1) FROM syscalls.sys_enter_write WHERE NOT (fd = 3) AND -fd < 0").unwrap();
    let super::QueryBody::Aggregate { aggs, .. } = &l.body else { panic!("an aggregate") };
    assert_eq!(aggs[0].to_string(), "SUM((count / 1024) + 1)");
    assert_eq!(l.filter.unwrap().to_string(), "(NOT (fd == 3)) && (-fd < 0)");
}

/// A WHERE a view's constants decide in part keeps only the part an event
/// decides, and none when the constants decide it all.
#[test]
fn constant_parts_of_a_condition_are_taken_out() {
    let cond = |sql: &str| bind(sql).unwrap().filter.unwrap();
    let fd = cond("SELECT COUNT(*) FROM syscalls.sys_enter_write WHERE fd = 3");
    let and = |l: super::ScalarExpr, r: super::ScalarExpr| super::join::and_all(vec![l, r]).unwrap();
    let t = super::ScalarExpr::Bool(true);
    let f = super::ScalarExpr::Bool(false);
    assert_eq!(and(t.clone(), fd.clone()).without_constants(), Some(fd.clone()));
    assert_eq!(and(fd.clone(), t.clone()).without_constants(), Some(fd.clone()));
    assert_eq!(and(t.clone(), t.clone()).without_constants(), None);
    assert_eq!(and(f.clone(), fd.clone()).without_constants().and_then(|e| e.const_truth()), Some(false));
    assert_eq!(fd.clone().without_constants(), Some(fd));
}

/// Two integer constants compare now (a view's `call` where a branch fills it
/// with one), and a CASE on a constant condition is the branch it takes, cast
/// to the CASE's type, so that branch reads no other column.
#[test]
fn integer_constants_compare_and_constant_cases_are_decided() {
    use super::{BinaryOp, ScalarExpr};
    use crate::types::DataType;
    let int = |value: u64| ScalarExpr::Int { value, ty: DataType::U64 };
    let cmp = |op, l, r| ScalarExpr::Binary {
        op,
        left: Box::new(l),
        right: Box::new(r),
        ty: DataType::Bool,
        operand_ty: DataType::U64,
    };
    assert_eq!(cmp(BinaryOp::Eq, int(3), int(3)).const_truth(), Some(true));
    assert_eq!(cmp(BinaryOp::Eq, int(3), int(4)).const_truth(), Some(false));
    assert_eq!(cmp(BinaryOp::Ne, int(3), int(4)).const_truth(), Some(true));
    let fd = bind("SELECT fd FROM syscalls.sys_enter_write").unwrap();
    let super::QueryBody::Rows { columns, .. } = &fd.body else { panic!("rows") };
    let fd = columns[0].source.clone();
    assert_eq!(cmp(BinaryOp::Eq, fd.clone(), int(3)).const_truth(), None);
    let case = |cond| ScalarExpr::Cond {
        cond: Box::new(cond),
        then: Box::new(fd.clone()),
        otherwise: Box::new(int(0)),
        ty: DataType::U64,
    };
    let taken = case(ScalarExpr::Bool(true)).without_constant_cases();
    assert_eq!(taken, ScalarExpr::Cast { expr: Box::new(fd.clone()), ty: DataType::U64 });
    assert_eq!(case(ScalarExpr::Bool(false)).without_constant_cases(), int(0));
    let open = case(cmp(BinaryOp::Eq, fd.clone(), int(3)));
    assert_eq!(open.clone().without_constant_cases(), open);
}

/// The WHERE of `sql`, bound, as text and as the pattern of its string match.
fn like_filter(sql: &str) -> (String, Option<super::StrPattern>) {
    let f = bind(sql).unwrap_or_else(|e| panic!("{}", e.render(sql))).filter.expect("a WHERE");
    let pattern = match &f {
        super::ScalarExpr::StrMatch { pattern, .. } => Some(*pattern),
        _ => None,
    };
    (f.to_string(), pattern)
}

#[test]
fn like_binds_exact_prefix_suffix_and_contains_patterns() {
    use super::StrPattern::{Contains, Exact, Prefix, Suffix};
    let w = |cond: &str| like_filter(&format!("SELECT COUNT(*) FROM syscalls.sys_enter_openat WHERE {cond}"));
    assert_eq!(w("filename LIKE '/etc/passwd'"), ("filename = '/etc/passwd'".into(), Some(Exact)));
    assert_eq!(w("filename LIKE '/etc/%'"), ("filename LIKE '/etc/%'".into(), Some(Prefix)));
    assert_eq!(w("filename LIKE '%.so'"), ("filename LIKE '%.so'".into(), Some(Suffix)));
    assert_eq!(w("filename NOT LIKE '%.so'"), ("filename NOT LIKE '%.so'".into(), Some(Suffix)));
    assert_eq!(w("filename LIKE '%lib%'"), ("filename LIKE '%lib%'".into(), Some(Contains)));
    assert_eq!(w("filename NOT LIKE '%lib%'"), ("filename NOT LIKE '%lib%'".into(), Some(Contains)));
    // `%` alone, or `%%`, matches every string; NOT LIKE none.
    assert_eq!(w("filename LIKE '%'"), ("true".into(), None));
    assert_eq!(w("filename LIKE '%%'"), ("true".into(), None));
    assert_eq!(w("filename NOT LIKE '%%'"), ("false".into(), None));
    // The empty string is not every string.
    assert_eq!(w("filename LIKE ''"), ("filename = ''".into(), Some(Exact)));
}

#[test]
fn like_of_constants_is_decided_when_bound() {
    let w = |cond: &str| {
        like_filter(&format!(
            "SELECT COUNT(*) FROM syscalls.sys_enter_openat WHERE CASE WHEN flags = 0 THEN 'read.log' ELSE 'x' END {cond}"
        ))
        .0
    };
    assert_eq!(w("LIKE '%.log'"), "flags == 0");
    assert_eq!(w("NOT LIKE '%.log'"), "NOT (flags == 0)");
    assert_eq!(w("LIKE '%ad.l%'"), "flags == 0");
    assert_eq!(w("LIKE '%x%'"), "NOT (flags == 0)");
    assert_eq!(w("LIKE '%x'"), "NOT (flags == 0)");
    assert_eq!(w("LIKE '%o%'"), "flags == 0");
    assert_eq!(w("LIKE 'read%'"), "flags == 0");
}

#[test]
fn like_refuses_underscores_and_inner_percent_signs_at_the_wildcard() {
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_openat WHERE filename LIKE '%a_b%'";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `_` (any one character, at character 3 of '%a_b%') is not supported in LIKE at 1:71\n\
             1 | {sql}\n\
             {}^\n  \
             help: LIKE patterns are 'abc' (equal), 'abc%' (starts with), '%abc' (ends with) and '%abc%' \
             (contains); `_` cannot be matched in the kernel yet",
            " ".repeat(74)
        )
    );
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_openat WHERE filename LIKE '/etc/%.conf'";
    assert_eq!(
        rendered(sql),
        format!(
            "error: `%` is supported only at a LIKE pattern's start and end, not at character 6 of '/etc/%.conf' at 1:74\n\
             1 | {sql}\n\
             {}^\n  \
             help: LIKE patterns are 'abc' (equal), 'abc%' (starts with), '%abc' (ends with) and '%abc%' \
             (contains); for 'a%b' write `s LIKE 'a%' AND s LIKE '%b'` (which also matches 'ab')",
            " ".repeat(77)
        )
    );
}

/// IN lists ANDed over one expression are one list, the values both allow,
/// where the first stood; lists that share no value make the condition false
/// (a view's branch whose calls the query's `call IN (…)` leaves out).
#[test]
fn in_lists_over_one_expression_are_intersected() {
    let filter = |w: &str| {
        let sql = format!("SELECT fd FROM syscalls.sys_enter_write WHERE {w}");
        bind(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql))).filter.expect("a WHERE")
    };
    let both = filter("fd IN (0, 1, 2) AND count > 5 AND fd IN (3, 2, 1)");
    assert_eq!(both.const_truth(), None);
    assert_eq!(both.without_constants().unwrap().to_string(), "((fd == 1) || (fd == 2)) && (count > 5)");
    let none = filter("fd IN (0, 1) AND count > 5 AND fd IN (2, 3)");
    assert_eq!(none.const_truth(), Some(false));
    let other_exprs = filter("fd IN (0, 1) AND count IN (2, 3)");
    assert_eq!(other_exprs.clone().without_constants(), Some(other_exprs));
}
