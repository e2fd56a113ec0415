//! The report's query and fold against this machine: they read tracefs and
//! the kernel's BTF (the fold's C compiles against the kernel's `vmlinux.h`),
//! so they are integration tests, run with the host visible, not unit tests,
//! which `scripts/test-pure.sh` runs with it hidden.

use ebq_report::kernel_fold::{source, FDOPENS_MAP, FILES_MAP, TOTALS_MAP};
use ebq_report::query::{sql, sql_for_kernel_fold, OPEN_CALLS};

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
/// layout assertions are checked (nothing is loaded); and with `--stdio`'s
/// mark, whose uprobe branches read registers beside the file columns'
/// `vmlinux.h`, against this host (the fixture's libc has no stdio symbols).
#[test]
fn the_fold_compiles_with_clang() {
    for stdio_mark in [false, true] {
        let kernel: std::sync::Arc<dyn ebq::host::KernelInfo> = match stdio_mark {
            false => ebq::host::FixtureKernel::checked_in(),
            true => ebq::Engine::new().expect("tracefs (the report runs as root)").catalog().kernel_arc(),
        };
        let syscalls = kernel.syscalls().clone();
        let fold = std::sync::Arc::new(ebq::plan::RowFold {
            name: "test".into(),
            source: source(&syscalls, stdio_mark),
            maps: [FILES_MAP, TOTALS_MAP]
                .into_iter()
                .chain(stdio_mark.then_some(FDOPENS_MAP))
                .map(Into::into)
                .collect(),
        });
        let options = ebq::plan::PlanOptions { row_fold: Some(fold), ..Default::default() };
        let sql = sql_for_kernel_fold(&syscalls, stdio_mark);
        let engine = ebq::Engine::with_kernel(kernel.clone()).with_options(options);
        let prepared = engine.prepare(&sql).unwrap_or_else(|e| panic!("{}", e.render(&sql)));
        if let Err(e) = ebq::runtime::compile(prepared.source()) {
            panic!("stdio mark {stdio_mark}: {e}");
        }
    }
}
