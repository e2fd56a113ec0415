//! ebq's BTF reader against the running kernel's BTF (`/sys/kernel/btf/vmlinux`, world
//! readable), checked with an independent reader: bpftool's raw dump. Every type is
//! printed the way `bpftool btf dump file … format raw` prints it and compared line by
//! line; then the paths and tracepoints issue 20 needs are checked by name.
//! Skipped (with a message) on a kernel without BTF or a machine without bpftool.

use std::collections::HashMap;
use std::fmt::Write;
use std::process::Command;

use ebq::btf::{Btf, BtfError, Kind, KindTag, LeafType, TypeId};

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn vmlinux() -> Option<Vec<u8>> {
    let bytes = std::fs::read(VMLINUX).ok();
    if bytes.is_none() {
        eprintln!("skipped: {VMLINUX} is not readable");
    }
    bytes
}

/// bpftool's raw dump, one entry per type id (header line plus its member lines).
fn bpftool_dump() -> Option<Vec<String>> {
    let out = Command::new("bpftool").args(["btf", "dump", "file", VMLINUX, "format", "raw"]).output();
    let Ok(out) = out.map_err(|e| eprintln!("skipped: bpftool: {e}")) else { return None };
    assert!(out.status.success(), "bpftool failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut types = vec![String::from("[0] VOID")];
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        if line.starts_with('[') {
            types.push(line.to_string());
        } else {
            let last = types.last_mut().unwrap();
            last.push('\n');
            last.push_str(line);
        }
    }
    Some(types)
}

/// A type as bpftool's `format raw` prints it (bpftool's btf.c, dump_btf_type).
fn render(btf: &Btf, id: TypeId) -> String {
    let ty = btf.get(id).unwrap();
    let name = match btf.name(ty) {
        "" => "(anon)",
        n => n,
    };
    let kind = match ty.kind {
        Kind::Enum(e) if e.wide => "ENUM64".to_string(),
        k => format!("{:?}", k.tag()).to_uppercase(),
    };
    let kind = kind.replace("FUNCPROTO", "FUNC_PROTO").replace("DECLTAG", "DECL_TAG").replace("TYPETAG", "TYPE_TAG");
    if id == 0 {
        return "[0] VOID".into();
    }
    let mut s = format!("[{id}] {kind} '{name}'");
    let linkage = |l: u32| ["static", "global", "extern"].get(l as usize).copied().unwrap_or("(unknown)");
    match ty.kind {
        Kind::Void => {}
        Kind::Int(i) => {
            let enc = match (i.signed, i.char, i.bool) {
                (false, false, false) => "(none)",
                (true, false, false) => "SIGNED",
                (false, true, false) => "CHAR",
                (false, false, true) => "BOOL",
                _ => "UNKN",
            };
            write!(s, " size={} bits_offset={} nr_bits={} encoding={enc}", i.size, i.bit_offset, i.bits).unwrap();
        }
        Kind::Ptr(t) | Kind::Typedef(t) | Kind::Volatile(t) | Kind::Const(t) | Kind::Restrict(t) | Kind::TypeTag(t) => {
            write!(s, " type_id={t}").unwrap()
        }
        Kind::Array { elem, index, len } => write!(s, " type_id={elem} index_type_id={index} nr_elems={len}").unwrap(),
        Kind::Struct(c) | Kind::Union(c) => {
            write!(s, " size={} vlen={}", c.size, btf.members(c).len()).unwrap();
            for m in btf.members(c) {
                let n = match btf.name(m) {
                    "" => "(anon)",
                    n => n,
                };
                write!(s, "\n\t'{n}' type_id={} bits_offset={}", m.ty, m.offset_bits).unwrap();
                if m.bitfield_bits != 0 {
                    write!(s, " bitfield_size={}", m.bitfield_bits).unwrap();
                }
            }
        }
        Kind::Enum(e) => {
            let enc = if e.signed { "SIGNED" } else { "UNSIGNED" };
            write!(s, " encoding={enc} size={} vlen={}", e.size, btf.enum_values(e).len()).unwrap();
            for v in btf.enum_values(e) {
                let val = match (e.signed, e.wide) {
                    (true, false) => format!("{}", v.value as i64),
                    (false, false) => format!("{}", v.value),
                    (true, true) => format!("{}LL", v.value as i64),
                    (false, true) => format!("{}ULL", v.value),
                };
                write!(s, "\n\t'{}' val={val}", btf.name(v)).unwrap();
            }
        }
        Kind::Fwd { union } => write!(s, " fwd_kind={}", if union { "union" } else { "struct" }).unwrap(),
        Kind::Func { proto, linkage: l } => write!(s, " type_id={proto} linkage={}", linkage(l as u32)).unwrap(),
        Kind::FuncProto { ret, params } => {
            write!(s, " ret_type_id={ret} vlen={}", btf.params(params).len()).unwrap();
            for p in btf.params(params) {
                let n = match btf.name(p) {
                    "" => "(anon)",
                    n => n,
                };
                write!(s, "\n\t'{n}' type_id={}", p.ty).unwrap();
            }
        }
        Kind::Var { ty, linkage: l } => write!(s, " type_id={ty}, linkage={}", linkage(l)).unwrap(),
        Kind::Datasec { size, vars } => {
            write!(s, " size={size} vlen={}", btf.section_vars(vars).len()).unwrap();
            for v in btf.section_vars(vars) {
                let var = btf.type_name(v.ty);
                write!(s, "\n\ttype_id={} offset={} size={} (VAR '{var}')", v.ty, v.offset, v.size).unwrap();
            }
        }
        Kind::Float { size } => write!(s, " size={size}").unwrap(),
        Kind::DeclTag { ty, component } => write!(s, " type_id={ty} component_idx={component}").unwrap(),
    }
    s
}

#[test]
fn every_type_reads_as_bpftool_reads_it() {
    let (Some(bytes), Some(expected)) = (vmlinux(), bpftool_dump()) else { return };
    let btf = Btf::parse(&bytes).unwrap();
    assert_eq!(btf.type_count() as usize, expected.len());
    let mismatches: Vec<(String, String)> = (0..btf.type_count())
        .map(|id| (render(&btf, id), expected[id as usize].clone()))
        .filter(|(ours, theirs)| ours != theirs)
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} types differ, first: {:#?}",
        mismatches.len(),
        &mismatches[..mismatches.len().min(3)]
    );
}

/// bpftool's members of struct `name`, anonymous members flattened, as (offset_bits, type id).
fn bpftool_member(dump: &[String], strukt: &str, member: &str) -> (u32, TypeId) {
    let header = format!(" STRUCT '{strukt}' ");
    let id = dump.iter().position(|t| t.contains(&header)).unwrap_or_else(|| panic!("no struct {strukt}"));
    find_in(dump, id, member, 0).unwrap_or_else(|| panic!("bpftool: struct {strukt} has no {member}"))
}

fn find_in(dump: &[String], id: usize, member: &str, base: u32) -> Option<(u32, TypeId)> {
    for line in dump[id].lines().skip(1) {
        let fields: HashMap<&str, &str> = line.split_whitespace().skip(1).filter_map(|f| f.split_once('=')).collect();
        let (ty, off): (TypeId, u32) = (fields["type_id"].parse().unwrap(), fields["bits_offset"].parse().unwrap());
        let name = line.trim().split('\'').nth(1).unwrap();
        if name == member {
            return Some((base + off, ty));
        }
        let is_composite =
            dump[ty as usize].contains(" STRUCT '(anon)'") || dump[ty as usize].contains(" UNION '(anon)'");
        if name == "(anon)" && is_composite {
            if let Some(found) = find_in(dump, ty as usize, member, base + off) {
                return Some(found);
            }
        }
    }
    None
}

#[test]
fn issue_20_paths_have_bpftools_offsets() {
    let (Some(bytes), Some(dump)) = (vmlinux(), bpftool_dump()) else { return };
    let btf = Btf::parse(&bytes).unwrap();
    let ptr_to = |s: &str| {
        let id = btf.find(s, KindTag::Struct).unwrap();
        (1..btf.type_count()).find(|&p| btf.kind(p) == Kind::Ptr(id)).unwrap()
    };
    // `derefs`: which steps follow a pointer (false: a member of an embedded struct).
    let check = |root: &str, path: &[&str], structs: &[&str], derefs: &[bool], leaf: LeafType| {
        let resolved = btf.resolve_path(ptr_to(root), path).unwrap_or_else(|e| panic!("{root} {path:?}: {e}"));
        let ours: Vec<(u32, TypeId)> = resolved.hops.iter().map(|h| (h.offset_bits, h.ty)).collect();
        let theirs: Vec<(u32, TypeId)> = structs.iter().zip(path).map(|(s, m)| bpftool_member(&dump, s, m)).collect();
        assert_eq!(ours, theirs, "{root} {path:?}");
        assert_eq!(resolved.hops.iter().map(|h| h.deref).collect::<Vec<_>>(), derefs, "{root} {path:?}");
        assert_eq!(resolved.leaf, leaf, "{root} {path:?}");
    };
    let u32_ = LeafType::Integer { bytes: 4, signed: false };
    let u64_ = LeafType::Integer { bytes: 8, signed: false };
    check("request", &["q"], &["request"], &[true], LeafType::Pointer);
    check("request", &["__data_len"], &["request"], &[true], u32_);
    check("request", &["__sector"], &["request"], &[true], u64_);
    let disk_name = ["request", "request_queue", "gendisk"];
    check("request", &["q", "disk", "disk_name"], &disk_name, &[true; 3], LeafType::CharArray { len: 32 });
    check("io_kiocb", &["file", "f_inode", "i_ino"], &["io_kiocb", "file", "inode"], &[true; 3], u64_);
    check("io_kiocb", &["opcode"], &["io_kiocb"], &[true], LeafType::Integer { bytes: 1, signed: false });
    check("io_kiocb", &["cqe", "user_data"], &["io_kiocb", "io_cqe"], &[true, false], u64_);
}

#[test]
fn tracepoint_args_are_the_kernels_parameters() {
    let Some(bytes) = vmlinux() else { return };
    let btf = Btf::parse(&bytes).unwrap();
    let args = |tp: &str| -> Vec<(String, String)> {
        btf.tracepoint_args(tp)
            .unwrap_or_else(|| panic!("no btf_trace_{tp}"))
            .into_iter()
            .map(|a| (a.name, a.c_type))
            .collect()
    };
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    };
    // TP_PROTO in include/trace/events/block.h, io_uring.h and syscalls.h.
    assert_eq!(
        args("block_rq_complete"),
        pairs(&[("rq", "struct request *"), ("error", "blk_status_t"), ("nr_bytes", "unsigned int")])
    );
    assert_eq!(args("block_rq_issue"), pairs(&[("rq", "struct request *")]));
    assert_eq!(args("io_uring_submit_req"), pairs(&[("req", "struct io_kiocb *")]));
    assert_eq!(args("sys_enter"), pairs(&[("regs", "struct pt_regs *"), ("id", "long int")]));
    assert_eq!(args("sys_exit"), pairs(&[("regs", "struct pt_regs *"), ("ret", "long int")]));
    assert_eq!(btf.tracepoint_args("sys_enter_read"), None, "per-syscall events are not raw tracepoints");
    let rq = btf.tracepoint_args("block_rq_complete").unwrap()[0].ty;
    let disk = btf.resolve_path(rq, &["q", "disk", "disk_name"]).unwrap();
    assert_eq!(disk.c_access("rq"), "rq->q->disk->disk_name");
    assert_eq!(btf.c_type_name(disk.ty), "char[32]");
}

#[test]
fn a_misspelt_member_of_a_kernel_struct_is_suggested() {
    let Some(bytes) = vmlinux() else { return };
    let btf = Btf::parse(&bytes).unwrap();
    let rq = btf.tracepoint_args("block_rq_complete").unwrap()[0].ty;
    match btf.resolve_path(rq, &["q", "disk", "disk_nme"]) {
        Err(ebq::btf::PathError::UnknownMember { at: 2, container, suggestions, members, .. }) => {
            assert_eq!(container, "struct gendisk");
            assert_eq!(suggestions, ["disk_name"]);
            assert!(members.iter().any(|m| m == "part0"));
        }
        other => panic!("{other:?}"),
    }
}

/// Type sections cut at sampled points (by shrinking the header's type length) fail with
/// an error, never a panic, unless the cut falls between types and no earlier type refers
/// past it (then it is a smaller valid BTF).
#[test]
fn a_cut_kernel_blob_is_an_error() {
    let Some(bytes) = vmlinux() else { return };
    let all = Btf::parse(&bytes).unwrap().type_count();
    let type_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    for cut in (1..type_len).step_by(type_len as usize / 97) {
        let mut blob = bytes.clone();
        blob[12..16].copy_from_slice(&cut.to_le_bytes());
        match Btf::parse(&blob) {
            Err(BtfError::Truncated { .. } | BtfError::BadTypeRef { .. }) => {}
            Ok(btf) if btf.type_count() < all => {}
            other => panic!("cut at {cut}: {:?}", other.map(|b| b.type_count())),
        }
    }
    for len in [0, 1, 23, 24, 100, bytes.len() / 2, bytes.len() - 1] {
        assert!(Btf::parse(&bytes[..len]).is_err(), "prefix of {len} bytes");
    }
}
