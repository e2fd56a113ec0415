//! Binding an expanding event (`aio.submit`, `aio.complete`; see
//! [`crate::catalog::expand`]): its columns are ebq's record of one element,
//! and the tracepoint it runs on must exist here with the fields the program
//! reads from it.

use super::{BoundEvent, EventSource};
use crate::catalog::expand::Expansion;
use crate::catalog::{Catalog, CatalogError, FieldKind};
use crate::error::{Error, QueryError, Result, Stage};
use crate::parse::EventRef;

/// The bound event `from`, which names expansion `x`.
pub(super) fn bind_expansion(from: &EventRef, x: Expansion, catalog: &Catalog) -> Result<BoundEvent> {
    let (category, name) = x.trigger();
    let unusable = |why: String| {
        Error::Query(
            QueryError::new(Stage::Bind, format!("{}: {}, {why}", from.name, x.description()), Some(from.span))
                .with_help("`ebq describe syscalls.sys_enter_io_submit` shows what this kernel has"),
        )
    };
    let trigger = match catalog.tracepoint(category, name) {
        Ok(format) => format,
        Err(CatalogError::UnknownEvent { .. }) => {
            return Err(unusable(format!("and this kernel has no tracepoint {category}:{name}")))
        }
        Err(other) => return Err(other.into()),
    };
    for field in x.trigger_fields() {
        let aligned = trigger
            .field(field)
            .is_some_and(|f| f.kind == FieldKind::Int && f.size == 8 && f.offset >= 8 && f.offset.is_multiple_of(8));
        if !aligned {
            return Err(unusable(format!(
                "and {category}:{name} has no 8-byte integer field `{field}` on this kernel"
            )));
        }
    }
    Ok(BoundEvent {
        name: from.name.clone(),
        format: x.format(),
        source: EventSource::Expand { expansion: x, trigger },
    })
}
