//! The front's entry point: SQL in, a prepared query (plan and BPF C) or its
//! explanation out. Starting it is the runtime's (`RunningQuery::start`, in `ebq-runtime`).

use crate::bind::{bind, LogicalPlan};
use crate::catalog::Catalog;
use crate::codegen::{generate, Program};
use crate::error::{Error, Result};
use crate::host::KernelInfo;
use crate::parse::parse_query;
use crate::plan::{plan, PhysicalPlan, PlanOptions};
use std::sync::Arc;

/// Prepares queries against a kernel's catalog: the running kernel's, or a
/// fixture's.
#[derive(Debug, Clone)]
pub struct Engine {
    catalog: Catalog,
    options: PlanOptions,
}

/// A query taken through every pure stage: ready to explain, or to run
/// (`RunningQuery::start`, in `ebq-runtime`).
#[derive(Debug, Clone)]
pub struct PreparedQuery {
    /// The bound query.
    pub logical: LogicalPlan,
    /// The kernel/user split.
    pub physical: PhysicalPlan,
    /// The generated BPF objects, one per kernel program of `physical`.
    pub programs: Vec<Program>,
}

impl Engine {
    /// An engine over the running kernel ([`crate::host::HostKernel`]).
    pub fn new() -> Result<Engine> {
        Ok(Engine::with_catalog(Catalog::open()?))
    }

    /// An engine over a given catalog.
    pub fn with_catalog(catalog: Catalog) -> Engine {
        Engine { catalog, options: PlanOptions::default() }
    }

    /// An engine over `kernel`: a [`crate::host::FixtureKernel`] in tests, the
    /// running kernel with other tracepoint formats for bundles.
    pub fn with_kernel(kernel: Arc<dyn KernelInfo>) -> Engine {
        Engine::with_catalog(Catalog::new(kernel))
    }

    /// Replaces the plan options.
    pub fn with_options(mut self, options: PlanOptions) -> Engine {
        self.options = options;
        self
    }

    /// The plan options.
    pub fn options(&self) -> &PlanOptions {
        &self.options
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Parses, binds, plans and generates code for `sql`.
    ///
    /// An error that proposes a fixed query has had that query planned: a fix
    /// that would not plan is dropped with the help that proposes it, so no
    /// hint sends the user to another error.
    pub fn prepare(&self, sql: &str) -> Result<PreparedQuery> {
        let (logical, physical) = self.plan_text(sql).map_err(|e| self.without_failing_fix(e, sql))?;
        let programs = generate(&physical);
        Ok(PreparedQuery { logical, physical, programs })
    }

    /// Parse, bind and plan: everything that can refuse a query.
    fn plan_text(&self, sql: &str) -> Result<(LogicalPlan, PhysicalPlan)> {
        let query = crate::parse::view::inline(parse_query(sql)?, self.catalog.views())?;
        let logical = bind(&query, &self.catalog)?;
        let physical = plan(sql, &logical, &self.catalog, &self.options)?;
        Ok((logical, physical))
    }

    /// `e`, less its fix and help when the fixed query is refused too.
    fn without_failing_fix(&self, e: Error, sql: &str) -> Error {
        let Error::Query(mut q) = e else { return e };
        if let Some(fixed) = q.fixed_query(sql) {
            if self.plan_text(&fixed).is_err() {
                q.fix = None;
                q.help = None;
            }
        }
        Error::Query(q)
    }
}

impl PreparedQuery {
    /// The first program's BPF C (a query has one program except a join of
    /// two streams, whose programs EXPLAIN prints one by one).
    pub fn source(&self) -> &str {
        &self.programs[0].source
    }

    /// EXPLAIN: the plan with its kernel/user split, then the generated C.
    pub fn explain(&self) -> String {
        let sources = match self.physical.window_join() {
            None => format!("Generated BPF C:\n{}", self.programs[0].source),
            Some(join) => self
                .programs
                .iter()
                .zip(&join.names)
                .map(|(p, name)| format!("Generated BPF C, stream {name}:\n{}", p.source))
                .collect::<Vec<_>>()
                .join("\n"),
        };
        format!(
            "Query:\n  {}\n\nPlan:\n{}\n{sources}",
            self.physical.sql.trim().replace('\n', "\n  "),
            self.physical.explain().lines().map(|l| format!("  {l}\n")).collect::<String>(),
        )
    }
}

#[cfg(test)]
mod hint_tests;
#[cfg(test)]
mod view_tests;
