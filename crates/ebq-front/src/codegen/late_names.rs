//! The kernel half of names late ([`crate::plan::late_names`]): the names
//! map, and the names an event writes when it creates a group.

use crate::bind::{ColumnSource, ScalarExpr};
use crate::catalog::FileColumn;
use crate::plan::late_names::{LateNames, NameKind, NAME_BYTES};
use crate::plan::StructLayout;
use std::fmt::Write;

/// The names map's name.
pub const NAMES: &str = "ebq_names";

/// The map and its helper, sized for `max_groups` groups.
pub fn declarations(late: &LateNames, max_groups: u32) -> String {
    let entries = max_groups.saturating_mul(late.names.len() as u32);
    format!(
        "/* Names of the identities the group key holds (fs_type, mount_point, file_name grouped by their\n \
         * struct file_system_type, vfsmount and dentry): written when an event creates a group; user space\n \
         * puts them back into the key and merges groups whose names are the same. Per CPU: a writer fills\n \
         * its own CPU's copy. */\nstruct ebq_name_key {{\n\t__u32 kind;\t/* 1 fs_type, 2 mount_point, 3 file_name */\n\
         \t__u32 __pad;\n\t__u64 id;\n}};\n\nstruct ebq_name {{\n\tchar s[{NAME_BYTES}];\n}};\n\nstruct {{\n\
         \t__uint(type, BPF_MAP_TYPE_PERCPU_HASH);\n\t__uint(max_entries, {entries});\n\t__type(key, struct ebq_name_key);\n\
         \t__type(value, struct ebq_name);\n}} {NAMES} SEC(\".maps\");\n\nstatic const struct ebq_name ebq_no_name = {{}};\n\n\
         /* This CPU's copy of the name of (kind, id); NULL for id 0 (no file: the name is \"\"). */\n\
         static __always_inline struct ebq_name *ebq_name_slot(__u32 kind, __u64 id)\n{{\n\
         \tstruct ebq_name_key k = {{ .kind = kind, .id = id }};\n\n\tif (!id)\n\t\treturn 0;\n\
         \tbpf_map_update_elem(&{NAMES}, &k, &ebq_no_name, BPF_NOEXIST);\n\treturn bpf_map_lookup_elem(&{NAMES}, &k);\n}}\n\n"
    )
}

/// `fresh`, the new-group code, with the names of `late` written first
/// (the key is `key`, already filled by this program's `key_fields`, whose
/// identity columns name the file each is of).
pub fn on_new_group(fresh: &str, late: &LateNames, key: &StructLayout, key_fields: &[(ScalarExpr, usize)]) -> String {
    let mut names = String::from("\t\t/* A new group: its names, once (plan::late_names). */\n");
    for n in &late.names {
        let fd = key_fields.iter().find(|(_, f)| *f == n.kernel).and_then(|(e, _)| match e {
            ScalarExpr::Column { source: ColumnSource::File { fd, .. }, .. } => Some(fd.clone()),
            _ => None,
        });
        let file = super::local_name(&ColumnSource::File {
            column: FileColumn::Handle,
            fd: fd.expect("a late name's key field is its identity column"),
        });
        let read = match n.kind {
            NameKind::FsType => format!("ebq_file_fs_type({file}, name->s)"),
            NameKind::MountPoint => format!("ebq_mount_point({file}, name->s)"),
            NameKind::FileName => format!("ebq_file_name({file}, name->s)"),
        };
        let _ = writeln!(
            names,
            "\t\t{{\n\t\t\tstruct ebq_name *name = ebq_name_slot({}, key.{});\n\n\t\t\tif (name)\n\t\t\t\t{read};\n\t\t}}",
            n.kind as u32, key.fields[n.kernel].name
        );
    }
    fresh.replacen("\tif (!v) {\n", &format!("\tif (!v) {{\n{names}"), 1)
}

#[cfg(test)]
mod tests {
    use crate::catalog::Catalog;
    use crate::codegen::MapRole;
    use crate::plan::{plan, PlanOptions};

    /// The C of `sql` planned as on a kernel with typed loads (the fixture's
    /// BTF has no bpf_rdonly_cast), names late.
    fn typed(sql: &str) -> crate::codegen::Program {
        let cat = Catalog::fixture();
        let l = crate::bind::bind(&crate::parse::parse_query(sql).unwrap(), &cat).unwrap();
        let mut p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
        p.programs[0].typed_files = true;
        crate::plan::late_names::apply(&mut p.programs[0]);
        crate::codegen::generate(&p).remove(0)
    }

    #[test]
    fn the_key_holds_identities_and_a_new_group_writes_its_names() {
        let p = typed("SELECT mount_point, fs_type, file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY mount_point, fs_type, file_name");
        let c = &p.source;
        for want in [
            "\tkey.c0_mount_point = fc_vfsmount_id;\n",
            "\tkey.c1_fs_type = fc_fs_type_id;\n",
            "\tkey.c2_file_name = fc_dentry_id;\n",
            "struct ebq_name *name = ebq_name_slot(2, key.c0_mount_point);\n\n\t\t\tif (name)\n\t\t\t\tebq_mount_point(fc_file, name->s);",
            "ebq_name_slot(1, key.c1_fs_type);\n\n\t\t\tif (name)\n\t\t\t\tebq_file_fs_type(fc_file, name->s);",
            "ebq_name_slot(3, key.c2_file_name);\n\n\t\t\tif (name)\n\t\t\t\tebq_file_name(fc_file, name->s);",
            "__uint(max_entries, 30720);",
        ] {
            assert!(c.contains(want), "{want}\n{c}");
        }
        // No string is read on the way to the group: only on the new-group path.
        let body = &c[c.find("int ebq_query(").unwrap()..];
        let before_lookup = &body[..body.find("bpf_map_lookup_elem(&ebq_groups").unwrap()];
        assert!(!before_lookup.contains("ebq_file_name(") && !before_lookup.contains("ebq_mount_point("), "{body}");
        assert!(p.maps.iter().any(|m| m.role == MapRole::Names && m.name == super::NAMES));
    }

    #[test]
    fn a_name_the_where_reads_stays_in_the_key() {
        let p = typed(
            "SELECT file_name, COUNT(*) FROM syscalls.sys_enter_read WHERE file_name LIKE 'a%' GROUP BY file_name",
        );
        assert!(!p.source.contains("ebq_names") && !p.maps.iter().any(|m| m.role == MapRole::Names), "{}", p.source);
    }
}
