//! Binding the derived file columns (`inode`, `fs_type`, `mount_point`, …).
//!
//! They resolve only at events whose fd names a file of the current task (see
//! [`crate::catalog::file_columns::fd_field`]); anywhere else, and on kernels
//! without BTF, naming one is a positioned bind error that says why.

use super::{Binder, ColumnSource, ScalarExpr};
use crate::catalog::file_columns::{btf_problem, fd_field, WHICH_EVENTS};
use crate::catalog::FileColumn;
use crate::error::{Error, QueryError, Stage};
use crate::parse::Expr;

impl Binder<'_> {
    /// The file column `name`, when this event has file columns and the kernel has BTF.
    pub(super) fn file_lookup(&self, name: &str) -> Option<ScalarExpr> {
        let column = FileColumn::from_name(name)?;
        let fd = fd_field(self.format)?;
        if btf_problem().is_some() {
            return None;
        }
        Some(ScalarExpr::Column { source: ColumnSource::File { column, fd: fd.to_string() }, ty: column.data_type() })
    }

    /// Names of the file columns this event has, for suggestions.
    pub(super) fn file_column_names(&self) -> Vec<&'static str> {
        match fd_field(self.format) {
            Some(_) => FileColumn::ALL.iter().map(|c| c.name()).collect(),
            None => vec![],
        }
    }

    /// Why the file column `name` is not available here (`None` if `name` is
    /// not a file column).
    pub(super) fn file_column_error(&self, name: &str, e: &Expr) -> Option<Error> {
        FileColumn::from_name(name)?;
        let span = super::expr::span_of(e);
        let error = match (fd_field(self.format), btf_problem()) {
            (None, _) => QueryError::new(
                Stage::Bind,
                format!("`{name}` is a file column, and {} has no fd argument to resolve", self.event_name),
                span,
            )
            .with_help(WHICH_EVENTS),
            (Some(_), Some(problem)) => QueryError::new(Stage::Bind, format!("`{name}`: {problem}"), span)
                .with_help("use a kernel with BTF (/sys/kernel/btf/vmlinux), or point EBQ_KERNEL_BTF at its BTF file"),
            (Some(_), None) => return None,
        };
        Some(Error::Query(error))
    }
}
