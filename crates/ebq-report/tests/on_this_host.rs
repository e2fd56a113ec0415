//! The report's query and fold against this machine: they read tracefs and
//! the kernel's BTF (the fold's C compiles against the kernel's `vmlinux.h`),
//! so they are integration tests, run with the host visible, not unit tests,
//! which `scripts/test-pure.sh` runs with it hidden.

use ebq_report::kernel_fold::{source, FILES_MAP, TOTALS_MAP};
use ebq_report::query::{sql, OPEN_CALLS};

/// The query binds and plans on this machine's catalog, one branch per open call it has.
#[test]
fn the_report_query_plans_with_an_open_branch_per_open_call() {
    let engine = ebq::Engine::new().expect("tracefs (the report runs as root)");
    let syscalls = engine.catalog().kernel().syscalls();
    let sql = sql(syscalls);
    let prepared = engine.prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    let explain = prepared.explain();
    for call in OPEN_CALLS.iter().filter(|c| syscalls.nr(c).is_some()) {
        assert!(explain.contains(&format!("syscalls:sys_exit_{call} ")), "{call}: {explain}");
    }
}

/// The fold compiles with clang as `ebq report io` loads it: the report's
/// query prepared with the fold against the fixture kernel, so the generated
/// layout assertions are checked (nothing is loaded).
#[test]
fn the_fold_compiles_with_clang() {
    let kernel = ebq::host::FixtureKernel::checked_in();
    let syscalls = ebq::host::KernelInfo::syscalls(&*kernel).clone();
    let fold = std::sync::Arc::new(ebq::plan::RowFold {
        name: "test".into(),
        source: source(&syscalls),
        maps: vec![FILES_MAP.into(), TOTALS_MAP.into()],
    });
    let options = ebq::plan::PlanOptions { row_fold: Some(fold), ..Default::default() };
    let sql = sql(&syscalls);
    let engine = ebq::Engine::with_kernel(kernel).with_options(options);
    let prepared = engine.prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
    if let Err(e) = ebq::runtime::compile(prepared.source()) {
        panic!("{e}");
    }
}
