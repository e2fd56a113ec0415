use super::*;
use crate::catalog::Catalog;

fn fixtures() -> Catalog {
    Catalog::fixture()
}

fn physical(sql: &str, options: &PlanOptions) -> Result<PhysicalPlan> {
    let cat = fixtures();
    let q = crate::parse::parse_query(sql)?;
    let l = crate::bind::bind(&q, &cat)?;
    plan(sql, &l, &cat, options)
}

#[test]
fn ebql_example_plan_prints_its_kernel_user_split() {
    let p = physical(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 7 WINDOW(time, 1000, 1000)",
        &PlanOptions::default(),
    )
    .unwrap();
    assert_eq!(
        p.explain(),
        format!(
            "[kernel] Attach     tracepoint:syscalls:sys_enter_pread64 (BPF_PROG_TYPE_TRACING, tp_btf)
[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)
[kernel] Via        tracepoint:syscalls:sys_enter_pread64: raw sys_enter (tp_btf), system call 17 checked first; {AUTO_RAW}
[kernel] Filter     pid == 7
[kernel] Aggregate  keys=[fd, cpu] values=[count, MAX(count), SUM(count)] in PERCPU_HASH ebq_groups (max 10240 groups; key 16 B, value 24 B; one lookup per event)
[kernel] Window     tumbling time 1000 ms: user-space timer advances ebq_window, waits for in-flight programs, drains the closed window
[user]   Merge      per-CPU values: add counts and sums, min of MINs, max of MAXes
[user]   Project    fd, cpu, COUNT(*), MAX(count), AVG(count) = sum / count
",
            AUTO_RAW = crate::plan::syscall_attach::AUTO_RAW
        )
    );
}

#[test]
fn avg_and_sum_of_the_same_argument_share_one_slot() {
    let p =
        physical("SELECT SUM(count), AVG(count), MIN(count) FROM syscalls.sys_enter_pread64", &PlanOptions::default())
            .unwrap();
    let KernelOutput::Aggregate { slots, value, .. } = &p.programs[0].output else { panic!() };
    assert_eq!(slots.len(), 2);
    assert_eq!(value.size, 24);
    let input = |i: usize| match p.user.columns[i].expr {
        crate::bind::PostExpr::Ref(crate::bind::Input { index, .. }) => p.user.inputs[index],
        ref other => panic!("column {i} is {other:?}"),
    };
    assert_eq!(input(0), UserSource::Slot(slots[0].field));
    assert_eq!(input(1), UserSource::Avg(slots[0].field));
}

#[test]
fn key_fields_are_laid_out_largest_first() {
    let p = physical(
        "SELECT comm, cpu, count, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY comm, cpu, count",
        &PlanOptions::default(),
    )
    .unwrap();
    let KernelOutput::Aggregate { key, .. } = &p.programs[0].output else { panic!() };
    let layout: Vec<(&str, u32)> = key.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect();
    assert_eq!(layout, [("c2_count", 0), ("c1_cpu", 8), ("c0_comm", 12), ("__pad", 28)]);
    // Only a windowed query's key carries the window number.
    let p = physical(
        "SELECT comm, cpu, count, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY comm, cpu, count WINDOW(time, 1000)",
        &PlanOptions::default(),
    )
    .unwrap();
    let KernelOutput::Aggregate { key, .. } = &p.programs[0].output else { panic!() };
    let layout: Vec<(&str, u32)> = key.fields.iter().map(|f| (f.name.as_str(), f.offset)).collect();
    assert_eq!(layout, [("window", 0), ("c2_count", 8), ("c1_cpu", 16), ("c0_comm", 20), ("__pad", 36)]);
}

#[test]
fn stack_budget_is_a_plan_error_not_a_verifier_error() {
    // Each SUM of a distinct expression is one 8-byte value slot.
    let sums = |n: usize| (0..n).map(|i| format!("SUM(count + {i})")).collect::<Vec<_>>().join(", ");
    let fits = format!("SELECT comm, {} FROM syscalls.sys_enter_pread64 GROUP BY comm", sums(40));
    assert!(physical(&fits, &PlanOptions::default()).is_ok());
    let wide = format!("SELECT comm, {} FROM syscalls.sys_enter_pread64 GROUP BY comm", sums(48));
    match physical(&wide, &PlanOptions::default()) {
        Err(Error::Query(q)) => assert!(q.message.contains("bytes of BPF stack"), "{}", q.message),
        other => panic!("expected a plan error, got {other:?}"),
    }
}

/// Big strings take no stack: a row's projected ones are read into the ring
/// record, filtered ones into the per-CPU string scratch. Grouped by, they
/// are copied into the key, which is on the stack and counts.
#[test]
fn big_strings_take_no_stack_outside_keys() {
    let strings = ["str(buf)", "str(count)", "str(buf, 126)", "str(count, 126)"];
    let rows = format!("SELECT {} FROM syscalls.sys_enter_write", strings.join(", "));
    let p = physical(&rows, &PlanOptions::default()).unwrap();
    let k = &p.programs[0];
    assert_eq!(k.string_slots(), [0, 1, 2, 3]);
    let filtered = format!("{rows} WHERE {}", strings.map(|s| format!("{s} <> 'x'")).join(" AND "));
    let p = physical(&filtered, &PlanOptions::default()).unwrap();
    let k = &p.programs[0];
    assert!(k.string_slots().is_empty());
    let grouped = format!("SELECT {0}, COUNT(*) FROM syscalls.sys_enter_write GROUP BY {0}", strings.join(", "));
    match physical(&grouped, &PlanOptions::default()) {
        Err(Error::Query(q)) => {
            assert!(q.message.contains("bytes of BPF stack (key + value 520 B, strings [])"), "{}", q.message)
        }
        other => panic!("expected a plan error, got {other:?}"),
    }
}

/// File columns at a mapped address need typed loads (bpf_rdonly_cast), which
/// the fixture kernel's BTF lacks: a plan error, not a verifier log. (On this
/// machine's kernel they load: crates/ebq-e2e/tests/mapped_files.rs.)
#[test]
fn mapped_file_columns_need_typed_loads() {
    for sql in [
        "SELECT file_name, COUNT(*) FROM exceptions.page_fault_user GROUP BY file_name",
        "SELECT inode FROM syscalls.sys_enter_msync",
    ] {
        match physical(sql, &PlanOptions::default()) {
            Err(Error::Query(q)) => {
                assert!(q.message.contains("this kernel's BTF has no bpf_rdonly_cast (Linux 6.2+)"), "{}", q.message)
            }
            other => panic!("{sql}: expected a plan error, got {other:?}"),
        }
    }
    // Without file columns the events plan as any other.
    assert!(physical(
        "SELECT address, COUNT(*) FROM exceptions.page_fault_user GROUP BY address",
        &PlanOptions::default()
    )
    .is_ok());
}

#[test]
fn sliding_windows_are_panes_and_bad_ring_sizes_are_refused() {
    let p =
        physical("SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WINDOW(time, 1000, 100)", &PlanOptions::default())
            .unwrap();
    assert_eq!((p.programs[0].window, p.user.window_panes), (KernelWindow::Time { size_ms: 100 }, 10));
    let e =
        physical("SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WINDOW(time, 1000, 300)", &PlanOptions::default());
    assert!(matches!(e, Err(Error::Query(q)) if q.message.contains("multiple of its step") && q.span.is_some()));
    let opts = PlanOptions { ringbuf_bytes: 5000, ..Default::default() };
    let e = physical("SELECT fd FROM syscalls.sys_enter_pread64", &opts);
    assert!(matches!(e, Err(Error::Query(q)) if q.message.contains("power of two")));
}

/// A query reading a user-memory string stays on the classic tracepoint (its
/// pointer is read from the record); the same event without one runs raw.
#[test]
fn user_strings_keep_a_syscall_event_classic() {
    let via = |sql: &str| {
        let p = physical(sql, &PlanOptions::default()).unwrap();
        p.programs[0].attach_notes.join("\n")
    };
    assert_eq!(
        via("SELECT comm, filename FROM syscalls.sys_enter_openat"),
        format!("tracepoint:syscalls:sys_enter_openat: classic tracepoint; {}", syscall_attach::USER_STRINGS)
    );
    assert!(
        via("SELECT dfd, COUNT(*) FROM syscalls.sys_enter_openat GROUP BY dfd").contains(": raw sys_enter (tp_btf)")
    );
}
