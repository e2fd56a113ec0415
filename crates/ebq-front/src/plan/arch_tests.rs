//! Planning for another instruction set: the fixture kernel as an arm64
//! machine ([`FixtureKernel::checked_in_arm64`]), whose system call numbers
//! are the generic table's and whose argument registers ebq does not map.

use crate::catalog::Catalog;
use crate::error::Error;
use crate::host::FixtureKernel;
use crate::plan::{plan, PhysicalPlan, PlanOptions};

fn arm64() -> Catalog {
    Catalog::new(FixtureKernel::checked_in_arm64())
}

fn physical(sql: &str, cat: &Catalog) -> Result<PhysicalPlan, Error> {
    let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), cat)?;
    plan(sql, &l, cat, &PlanOptions::default())
}

/// The `[kernel] Via` lines of EXPLAIN: how each system-call program attaches.
fn via(p: &PhysicalPlan) -> Vec<String> {
    p.explain().lines().filter_map(|l| l.strip_prefix("[kernel] Via        ").map(str::to_string)).collect()
}

/// `syscall_nr()` is the planned kernel's number (pread64 is 17 on x86-64, 67
/// on arm64), and arm64's system calls attach classic, EXPLAIN says why.
#[test]
fn an_arm64_plan_has_arm64s_numbers_and_attachment() {
    let sql = "SELECT COUNT(*) FROM raw_syscalls.sys_enter WHERE id = syscall_nr('pread64')";
    assert!(physical(sql, &Catalog::fixture()).unwrap().explain().contains("[kernel] Filter     id == 17\n"));
    assert_eq!(
        physical(sql, &arm64()).unwrap().explain(),
        "\
[kernel] Attach     tracepoint:raw_syscalls:sys_enter (BPF_PROG_TYPE_TRACEPOINT)
[kernel] Scope      all processes, or -p/-c process tree (ebq_config.scope)
[kernel] Via        tracepoint:raw_syscalls:sys_enter: classic tracepoint; system-call registers are mapped for x86-64 only, and this is aarch64
[kernel] Filter     id == 67
[kernel] Aggregate  keys=[] values=[count] in PERCPU_ARRAY ebq_groups, 1 slot (no GROUP BY, no window; value 8 B; one inlined lookup per event)
[kernel] Window     none: one result at the end (or every --interval, cumulative)
[user]   Merge      per-CPU values: add counts and sums, min of MINs, max of MAXes
[user]   Project    COUNT(*)
"
    );
}

#[test]
fn system_calls_attach_classic_on_arm64() {
    let sql = "SELECT COUNT(*) FROM syscalls.sys_enter_pread64";
    let x86 = physical(sql, &Catalog::fixture()).unwrap();
    assert!(via(&x86)[0].contains("raw sys_enter (tp_btf), system call 17 checked first"), "{:?}", via(&x86));
    assert_eq!(
        via(&physical(sql, &arm64()).unwrap()),
        ["tracepoint:syscalls:sys_enter_pread64: classic tracepoint; \
          system-call registers are mapped for x86-64 only, and this is aarch64"]
    );
}

#[test]
fn probe_arguments_are_refused_on_arm64() {
    let sql = "SELECT COUNT(*) FROM uprobe:libc:pread64";
    assert!(physical(sql, &Catalog::fixture()).is_ok());
    let Err(Error::Query(q)) = physical(sql, &arm64()) else { panic!("a uprobe binds on arm64") };
    assert_eq!(q.message, "uprobe:libc:pread64: probe arguments are mapped for x86-64 only, and this is aarch64");
}
