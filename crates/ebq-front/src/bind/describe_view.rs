//! `ebq describe VIEW`: each column of a view with its type on this kernel.

use crate::catalog::Catalog;
use crate::error::Error;
use crate::parse::View;
use crate::types::DataType;

/// Each column of `view` with its type, found by binding `SELECT column FROM
/// view` against `catalog` (so a column this kernel cannot give shows why
/// instead of a type).
pub fn describe_view(catalog: &Catalog, view: &View) -> Vec<(String, Result<DataType, String>)> {
    view.columns
        .iter()
        .map(|(name, _)| {
            let sql = format!("SELECT {name} FROM {}", view.name);
            let ty = crate::parse::parse_query(&sql)
                .and_then(|q| crate::parse::view::inline(q, catalog.views()))
                .and_then(|q| super::bind(&q, catalog))
                .map(|l| l.schema()[0].1)
                .map_err(|e| match e {
                    Error::Query(q) => q.message,
                    other => other.to_string(),
                });
            (name.clone(), ty)
        })
        .collect()
}
