//! Views in the catalog: the built-in ones (`io.ops`) and the user's own
//! (`--view NAME=FILE.sql`). A view is SQL text, inlined into the query that
//! reads it before bind ([`crate::parse::view`]), so it needs no kernel.

use super::Catalog;
use crate::error::Result;
use crate::parse::View;
use std::sync::Arc;

/// The built-in views: name and SQL text.
pub const BUILTIN: &[(&str, &str)] = &[("io.ops", include_str!("views/io_ops.sql"))];

/// The built-in views, parsed (their text is checked by the unit tests).
pub(super) fn builtin() -> Arc<Vec<View>> {
    Arc::new(BUILTIN.iter().map(|(name, sql)| View::parse(name, sql).expect("a built-in view parses")).collect())
}

impl Catalog {
    /// The views FROM can name.
    pub fn views(&self) -> &[View] {
        &self.views
    }

    /// A view by name.
    pub fn view(&self, name: &str) -> Option<&View> {
        self.views.iter().find(|v| v.name.eq_ignore_ascii_case(name))
    }

    /// Adds (or replaces) a view; its text is parsed and checked now.
    pub fn with_view(mut self, name: &str, sql: &str) -> Result<Catalog> {
        let view = View::parse(name, sql)?;
        let views = Arc::make_mut(&mut self.views);
        views.retain(|v| !v.name.eq_ignore_ascii_case(name));
        views.push(view);
        Ok(self)
    }
}

impl Catalog {
    /// `ebq describe VIEW`: each column with its type, found by binding
    /// `SELECT column FROM view` against this catalog (so a column this
    /// kernel cannot give shows why instead of a type).
    pub fn describe_view(&self, view: &View) -> Vec<(String, std::result::Result<crate::types::DataType, String>)> {
        view.columns
            .iter()
            .map(|(name, _)| {
                let sql = format!("SELECT {name} FROM {}", view.name);
                let ty = crate::parse::parse_query(&sql)
                    .and_then(|q| crate::parse::view::inline(q, &self.views))
                    .and_then(|q| crate::bind::bind(&q, self))
                    .map(|l| l.schema()[0].1)
                    .map_err(|e| match e {
                        crate::error::Error::Query(q) => q.message,
                        other => other.to_string(),
                    });
                (name.clone(), ty)
            })
            .collect()
    }
}
