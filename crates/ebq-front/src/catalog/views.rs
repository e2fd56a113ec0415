//! Views in the catalog: the built-in ones (`io.ops`) and the user's own
//! (`--view NAME=FILE.sql`). A view is SQL text, inlined into the query that
//! reads it before bind ([`crate::parse::view`]), so it needs no kernel.
//! What type each column has on a kernel is bind's to say (`bind::describe_view`).

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
