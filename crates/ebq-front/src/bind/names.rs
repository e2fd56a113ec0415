//! Output column names: a column selected as `alias.column` is named
//! `column`, as a user reads it (`comm`, not `i.comm`), unless another output
//! column would then have the same name; those keep their qualifier.

use super::OutputColumn;
use sqlparser::ast::{Expr, SelectItem};
use std::collections::HashMap;

/// Drops the stream qualifier from the names of columns selected as a bare
/// `alias.column` (no `AS`), where the short name stays unique. `items` are
/// the SELECT items `columns` were bound from, one each (a `*` expands to
/// unqualified names, so there is nothing to shorten then).
pub(super) fn shorten<S>(columns: &mut [OutputColumn<S>], items: &[SelectItem]) {
    if columns.len() != items.len() {
        return;
    }
    let short: Vec<Option<String>> = items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) if parts.len() == 2 => {
                Some(parts[1].value.clone())
            }
            _ => None,
        })
        .collect();
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for (c, s) in columns.iter().zip(&short) {
        *uses.entry(s.as_deref().unwrap_or(&c.name)).or_default() += 1;
    }
    let unique: Vec<bool> = short.iter().map(|s| s.as_deref().is_some_and(|s| uses[s] == 1)).collect();
    for ((c, s), unique) in columns.iter_mut().zip(short).zip(unique) {
        if let (Some(s), true) = (s, unique) {
            c.name = s;
        }
    }
}
