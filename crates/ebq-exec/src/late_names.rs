//! Late names (`ebq_front::plan::late_names`) put back: a group's kernel key,
//! which holds a file's identities, rewritten into the display key with the
//! names the kernel wrote for them.

use crate::decode::{field_value, Value};
use ebq_front::plan::late_names::{LateNames, NameKind};
use ebq_front::plan::StructLayout;

/// Kernel key bytes `bytes` (layout `kernel`) as `late`'s display key: the
/// other fields copied, each identity replaced by `name(kind, id)`
/// (NUL-padded, cut to its capacity).
pub fn to_display(
    late: &LateNames,
    kernel: &StructLayout,
    bytes: &[u8],
    name: &dyn Fn(NameKind, u64) -> Vec<u8>,
) -> Vec<u8> {
    let mut out = vec![0u8; late.display.size as usize];
    for (k, d) in &late.copied {
        let (from, to) = (&kernel.fields[*k], &late.display.fields[*d]);
        let n = from.ty.byte_size() as usize;
        out[to.offset as usize..to.offset as usize + n]
            .copy_from_slice(&bytes[from.offset as usize..from.offset as usize + n]);
    }
    for l in &late.names {
        let (from, to) = (&kernel.fields[l.kernel], &late.display.fields[l.display]);
        let id = match field_value(bytes, from) {
            Value::U(id) => id,
            other => unreachable!("identities are unsigned integers, not {other:?}"),
        };
        // Raw bytes, as a string the kernel read in place would be: decoding escapes them once.
        let text = name(l.kind, id);
        let cap = to.ty.byte_size() as usize;
        let text = &text[..text.len().min(cap - 1)];
        out[to.offset as usize..to.offset as usize + text.len()].copy_from_slice(text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ebq_front::bind::bind;
    use ebq_front::catalog::Catalog;
    use ebq_front::host::FixtureKernel;
    use ebq_front::parse::parse_query;
    use ebq_front::plan::{late_names, plan, KernelOutput, PlanOptions};

    #[test]
    fn a_key_maps_back_onto_the_display_layout_with_its_names() {
        let sql = "SELECT fs_type, fd, file_name, COUNT(*) FROM syscalls.sys_enter_read WHERE file_name != 'x' \
                   GROUP BY fs_type, fd, file_name WINDOW(time, 1000, 1000)";
        let cat = Catalog::new(FixtureKernel::checked_in());
        let l = bind(&parse_query(sql).unwrap(), &cat).unwrap();
        let mut k = plan(sql, &l, &cat, &PlanOptions::default()).unwrap().programs.remove(0);
        // As on a kernel with bpf_rdonly_cast.
        k.typed_files = true;
        late_names::apply(&mut k);
        let KernelOutput::Aggregate { key, key_fields, late_names: Some(l), .. } = &k.output else {
            panic!("fs_type is late (file_name is read by WHERE): {:?}", k.output)
        };
        assert_eq!(l.names.len(), 1, "only fs_type: {l:?}");
        assert_eq!(l.names[0].kind, NameKind::FsType);
        assert_eq!(key.size, 8 + 8 + 8 + 64, "window, fs_type id, fd, file_name: {key:?}");
        assert_eq!(l.display.size, 8 + 8 + 16 + 64, "{:?}", l.display);
        // window 7, fs id 0x1234, fd 3, file "f".
        let mut bytes = vec![0u8; key.size as usize];
        let put = |b: &mut Vec<u8>, field: usize, v: &[u8]| {
            let o = key.fields[field].offset as usize;
            b[o..o + v.len()].copy_from_slice(v);
        };
        let window = key.fields.iter().position(|f| f.name == "window").unwrap();
        put(&mut bytes, window, &7u64.to_le_bytes());
        put(&mut bytes, key_fields[0].1, &0x1234u64.to_le_bytes());
        put(&mut bytes, key_fields[1].1, &3u64.to_le_bytes());
        put(&mut bytes, key_fields[2].1, b"f");
        let shown = to_display(l, key, &bytes, &|kind, id| format!("{kind:?}:{id:x}").into_bytes());
        let (display, pos) = k.output.display_key().unwrap();
        let value = |i: usize| field_value(&shown, &display.fields[pos[i]]);
        assert_eq!(value(0), Value::S("FsType:1234".into()));
        assert_eq!(value(1), Value::U(3));
        assert_eq!(value(2), Value::S("f".into()));
        let w = display.fields.iter().find(|f| f.name == "window").unwrap();
        assert_eq!(field_value(&shown, w), Value::U(7));
    }
}
