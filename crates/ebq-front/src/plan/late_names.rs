//! Names late: an aggregate grouped by a file's name groups in the kernel by
//! the name's identity instead, and the name is read once per new group.
//!
//! `GROUP BY fs_type, file_name` would read two strings on every event and
//! hash an 80-byte key. The name is a function of a pointer the program holds
//! anyway: `file_name` of the file's `struct dentry *`, `fs_type` of its
//! `struct file_system_type *`, `mount_point` of its mount's `struct vfsmount *`. So
//! the kernel key holds those integers, and only when an event creates a
//! group (the map lookup misses) does the program read the names, into the
//! per-CPU hash `ebq_names` keyed by (kind, identity). User space reads the
//! names with the groups and rewrites each key into the layout it has always
//! decoded (strings in place): groups whose names coincide (two dentries of
//! one name, bind mounts) merge there exactly as panes of a sliding window do.
//!
//! Where it applies: one object (not a join of two streams) whose key
//! expression is the bare file column of the event the program runs on, read
//! nowhere else (a WHERE on the name reads the string anyway), and not for
//! pinned maps (an external sampler reads the kernel key). In a JOIN that is
//! the end event's file (an io_uring completion's request); a start event's
//! name travels in the pair as a string (`e.file_name` of a system call). Identity 0 is no file: its name is "".
//! One limit of identities: a dentry freed and reused for another name
//! within one window counts under the name its group was made with (the
//! dcache frees a dentry on unlink or under memory pressure, not while the
//! file is open).

use super::{KernelOutput, KernelPlan, StructLayout};
use crate::bind::{ColumnSource, ScalarExpr};
use crate::catalog::FileColumn;
use crate::types::DataType;

/// What a late name is the name of, and how the kernel writes it (`kind` in `ebq_names`' key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// `fs_type`, by the file system type.
    FsType = 1,
    /// `mount_point`, by the mount's `struct vfsmount *`.
    MountPoint = 2,
    /// `file_name`, by the dentry.
    FileName = 3,
}

impl NameKind {
    /// The kind of file column `c`, if it is a name ebq can resolve late.
    fn of(c: FileColumn) -> Option<NameKind> {
        match c {
            FileColumn::FsType => Some(NameKind::FsType),
            FileColumn::MountPoint => Some(NameKind::MountPoint),
            FileColumn::FileName => Some(NameKind::FileName),
            _ => None,
        }
    }

    /// The file column holding the identity.
    pub fn identity(self) -> FileColumn {
        match self {
            NameKind::FsType => FileColumn::FsTypeId,
            NameKind::MountPoint => FileColumn::VfsMountId,
            NameKind::FileName => FileColumn::DentryId,
        }
    }

    /// The name's file column.
    pub fn column(self) -> FileColumn {
        match self {
            NameKind::FsType => FileColumn::FsType,
            NameKind::MountPoint => FileColumn::MountPoint,
            NameKind::FileName => FileColumn::FileName,
        }
    }
}

/// Bytes of a name in `ebq_names` (the longest name column's capacity).
pub const NAME_BYTES: u32 = 64;

/// One key field grouped by identity.
#[derive(Debug, Clone, PartialEq)]
pub struct LateName {
    /// Its field in the kernel key.
    pub kernel: usize,
    /// Its field in the display key.
    pub display: usize,
    /// Which name.
    pub kind: NameKind,
}

/// How the kernel key maps onto the key user space decodes.
#[derive(Debug, Clone, PartialEq)]
pub struct LateNames {
    /// The key as it was laid out with the names in place: what exec decodes.
    pub display: StructLayout,
    /// The fields held as identities.
    pub names: Vec<LateName>,
    /// Every other field: (kernel field, display field), copied as bytes.
    pub copied: Vec<(usize, usize)>,
}

/// Regroups `k`'s aggregate by identities where it can (see the module doc).
pub fn apply(k: &mut KernelPlan) {
    if !k.typed_files {
        return;
    }
    let KernelOutput::Aggregate { key, key_fields, single_slot: false, late_names, .. } = &k.output else { return };
    if late_names.is_some() {
        return;
    }
    // A key field qualifies when it is a bare name column in every branch and read nowhere else.
    let late: Vec<(usize, NameKind)> = (0..key_fields.len())
        .filter_map(|i| {
            let kinds: Vec<Option<NameKind>> = k.with_branches().map(|b| name_key(b, i)).collect();
            let kind = kinds[0]?;
            kinds.iter().all(|x| *x == Some(kind)).then_some((i, kind))
        })
        .collect();
    if late.is_empty() {
        return;
    }
    let display = key.clone();
    let field_of = |i: usize| key_fields[i].1;
    // The kernel key: the same fields in the same order, identities for the late ones.
    let mut named: Vec<(String, DataType)> = vec![];
    let window = display.fields.iter().position(|f| f.name == "window");
    if window.is_some() {
        named.push(("window".into(), DataType::U64));
    }
    let first = named.len();
    for (i, (_, f)) in key_fields.iter().enumerate() {
        let field = &display.fields[*f];
        let ty = match late.iter().find(|(j, _)| *j == i) {
            Some((_, kind)) => kind.identity().data_type(),
            None => field.ty,
        };
        named.push((field.name.clone(), ty));
    }
    let (kernel, pos) = StructLayout::new(&named);
    let mut copied: Vec<(usize, usize)> = window.map(|w| (pos[0], w)).into_iter().collect();
    let mut names = vec![];
    for i in 0..key_fields.len() {
        match late.iter().find(|(j, _)| *j == i) {
            Some((_, kind)) => names.push(LateName { kernel: pos[first + i], display: field_of(i), kind: *kind }),
            None => copied.push((pos[first + i], field_of(i))),
        }
    }
    let late_names = LateNames { display, names, copied };
    rewrite(k, &kernel, &pos[first..], &late, &late_names);
}

/// Puts the kernel key, identity expressions and the mapping into `k` and its branches.
fn rewrite(k: &mut KernelPlan, kernel: &StructLayout, pos: &[usize], late: &[(usize, NameKind)], names: &LateNames) {
    let one = |p: &mut KernelPlan| {
        if let KernelOutput::Aggregate { key, key_fields, late_names, .. } = &mut p.output {
            *key = kernel.clone();
            for (i, (e, f)) in key_fields.iter_mut().enumerate() {
                *f = pos[i];
                if let Some((_, kind)) = late.iter().find(|(j, _)| *j == i) {
                    let fd = fd_of(e).expect("a name column");
                    let column = kind.identity();
                    *e = ScalarExpr::Column { source: ColumnSource::File { column, fd }, ty: column.data_type() };
                }
            }
            *late_names = Some(names.clone());
        }
    };
    one(k);
    for b in &mut k.branches {
        one(b);
    }
}

/// The name kind of key field `i` of `k` when it is a bare name column that
/// nothing else in the program reads.
fn name_key(k: &KernelPlan, i: usize) -> Option<NameKind> {
    let KernelOutput::Aggregate { key_fields, .. } = &k.output else { return None };
    let ScalarExpr::Column { source, .. } = &key_fields[i].0 else { return None };
    let ColumnSource::File { column, .. } = source else { return None };
    let kind = NameKind::of(*column)?;
    let mut elsewhere = vec![];
    let others =
        k.filter.iter().chain(k.output.exprs().into_iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| x));
    let pair_keys = k.pairing.iter().flat_map(|p| p.keys.iter().map(|(_, e, _)| e));
    for x in others.chain(pair_keys) {
        x.typed_columns(&mut elsewhere);
    }
    (!elsewhere.iter().any(|(c, _)| c == source)).then_some(kind)
}

/// The fd field a file column expression reads.
fn fd_of(e: &ScalarExpr) -> Option<String> {
    match e {
        ScalarExpr::Column { source: ColumnSource::File { fd, .. }, .. } => Some(fd.clone()),
        _ => None,
    }
}

impl LateNames {
    /// The display key's field for kernel key field `kernel`.
    pub fn display_field(&self, kernel: usize) -> usize {
        self.names
            .iter()
            .find(|n| n.kernel == kernel)
            .map(|n| n.display)
            .or_else(|| self.copied.iter().find(|(k, _)| *k == kernel).map(|(_, d)| *d))
            .expect("every kernel key field maps onto the display key")
    }
}

impl KernelOutput {
    /// The key user space decodes and, per `key_fields` entry, its field
    /// there: the kernel's key, or with late names the display key.
    pub fn display_key(&self) -> Option<(&StructLayout, Vec<usize>)> {
        let KernelOutput::Aggregate { key, key_fields, late_names, .. } = self else { return None };
        Some(match late_names {
            Some(l) => (&l.display, key_fields.iter().map(|(_, f)| l.display_field(*f)).collect()),
            None => (key, key_fields.iter().map(|(_, f)| *f).collect()),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::plan::{plan, KernelOutput, PlanOptions};

    fn output(sql: &str, options: &PlanOptions) -> KernelOutput {
        let cat = crate::catalog::Catalog::fixture();
        let q = crate::parse::parse_query(sql).unwrap();
        let l = crate::bind::bind(&q, &cat).unwrap();
        plan(sql, &l, &cat, options).unwrap().programs.remove(0).output
    }

    /// The fixture kernel reads files with CO-RE (no bpf_rdonly_cast): late
    /// names need typed loads there, so nothing changes.
    #[test]
    fn names_stay_in_the_key_without_typed_loads() {
        let o =
            output("SELECT file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY file_name", &Default::default());
        assert!(matches!(o, KernelOutput::Aggregate { late_names: None, .. }));
    }
}
