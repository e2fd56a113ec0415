//! The fuzz check shared by the libFuzzer target, the corpus replayer and the
//! in-house mutation loop: text → parse → bind → plan → codegen, against the
//! fixture kernel (no tracefs, BTF, kallsyms or binaries; no root). Any panic
//! is a finding; so is an error that is not a positioned query error, or an
//! error whose rendering panics.

use ebq_front::catalog::Catalog;
use ebq_front::error::Error;
use ebq_front::plan::PlanOptions;
use std::sync::OnceLock;

/// The catalog of the ebq crate's fixture kernel (its unit tests' too).
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::new(ebq_front::host::FixtureKernel::checked_in()))
}

/// Runs one input through every pure stage. Panics on a finding.
pub fn check(data: &[u8]) {
    // Only valid UTF-8: the CLI refuses anything else before ebq sees it.
    let Ok(sql) = std::str::from_utf8(data) else { return };
    check_str(sql);
}

/// [`check`] for text.
pub fn check_str(sql: &str) {
    let result = ebq_front::parse::parse_query(sql).and_then(|q| {
        let logical = ebq_front::bind::bind(&q, catalog())?;
        let physical = ebq_front::plan::plan(sql, &logical, catalog(), &PlanOptions::default())?;
        let source = ebq_front::codegen::generate(&physical);
        assert!(source.contains("SEC(\""), "generated C has no program section");
        let _ = physical.explain();
        Ok(())
    });
    if let Err(e) = result {
        let rendered = e.render(sql);
        match &e {
            Error::Query(q) => {
                assert!(q.span.is_some(), "query error without a position: {rendered}");
            }
            // The fixture catalog is complete for the events it has; unknown
            // events are query errors, so anything else is unexpected.
            other => panic!("not a query error: {other:?}"),
        }
    }
}
