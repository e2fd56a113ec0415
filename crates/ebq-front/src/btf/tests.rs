//! Tests on `tests/fixtures/btf/kernel_shapes.btf`, the `.BTF` section clang emits for
//! `kernel_shapes.c` (regenerate with `regenerate.sh` beside it). Expected offsets and
//! ids are bpftool's (`bpftool btf dump file kernel_shapes.btf format raw`).

use super::*;

const BLOB: &[u8] = include_bytes!("../../tests/fixtures/btf/kernel_shapes.btf");

fn fixture() -> Btf {
    Btf::parse(BLOB).expect("fixture parses")
}

/// `struct request *`, the type of `block_rq_complete`'s first argument.
fn request_ptr(btf: &Btf) -> TypeId {
    btf.tracepoint_args("block_rq_complete").unwrap()[0].ty
}

fn resolve(btf: &Btf, path: &str) -> Result<Path, PathError> {
    let steps: Vec<&str> = if path.is_empty() { vec![] } else { path.split('.').collect() };
    btf.resolve_path(request_ptr(btf), &steps)
}

fn leaf(btf: &Btf, path: &str) -> LeafType {
    resolve(btf, path).unwrap_or_else(|e| panic!("{path}: {e}")).leaf
}

fn refusal(btf: &Btf, path: &str) -> Unreadable {
    match resolve(btf, path) {
        Err(PathError::Unreadable { reason, .. }) => reason,
        other => panic!("{path}: expected Unreadable, got {other:?}"),
    }
}

#[test]
fn parses_every_type_of_the_fixture() {
    let btf = fixture();
    assert_eq!(btf.type_count(), 66);
    let request = btf.find("request", KindTag::Struct).unwrap();
    assert_eq!(request, 3);
    let Kind::Struct(c) = btf.kind(request) else { panic!() };
    assert_eq!(c.size, 240);
    assert_eq!(btf.members(c).len(), 23);
    assert_eq!(btf.find("gendisk", KindTag::Struct), Some(61));
    assert_eq!(btf.find("gendisk", KindTag::Fwd), None);
    assert_eq!(btf.find("hidden", KindTag::Fwd), Some(29));
    assert_eq!(btf.kind(31), Kind::Fwd { union: true });
    assert_eq!(btf.find("nonexistent", KindTag::Struct), None);
    assert_eq!(
        btf.kind(9),
        Kind::Int(Int { size: 8, signed: false, char: false, bool: false, bit_offset: 0, bits: 64 })
    );
    assert_eq!(btf.kind(33), Kind::Float { size: 4 });
    assert_eq!(btf.kind(39), Kind::TypeTag(8));
    assert_eq!(btf.type_name(39), "user");
    assert_eq!(btf.kind(41), Kind::DeclTag { ty: 3, component: 20 });
    assert_eq!(btf.functions().collect::<Vec<_>>(), [("__probestub_block_rq_complete", 50)]);
    let Kind::Datasec { size: 0, vars } = btf.kind(65) else { panic!("{:?}", btf.kind(65)) };
    let vars: Vec<(u32, u32)> = btf.section_vars(vars).iter().map(|v| (v.ty, v.size)).collect();
    assert_eq!(vars, [(54, 8), (59, 8), (60, 240), (64, 56)]);
    assert_eq!(btf.kind(60), Kind::Var { ty: 3, linkage: 1 });
}

#[test]
fn enums_keep_their_values() {
    let btf = fixture();
    let Kind::Enum(e) = btf.kind(btf.find("req_op", KindTag::Enum).unwrap()) else { panic!() };
    let values: Vec<(&str, u64)> = btf.enum_values(e).iter().map(|v| (btf.name(v), v.value)).collect();
    assert_eq!(values, [("REQ_OP_READ", 0), ("REQ_OP_WRITE", 1), ("REQ_OP_DISCARD", 3)]);
    // clang 14 marks no enum signed (kind_flag 0): -2 stays its 32-bit pattern.
    let Kind::Enum(e) = btf.kind(btf.find("sign_test", KindTag::Enum).unwrap()) else { panic!() };
    assert!(!e.signed && !e.wide && e.size == 4);
    assert_eq!(btf.enum_values(e)[0].value, 0xffff_fffe);
}

#[test]
fn sizes_follow_typedefs_arrays_and_pointers() {
    let btf = fixture();
    assert_eq!(btf.size_of(3), Some(240));
    assert_eq!(btf.size_of(7), Some(8), "sector_t -> u64 -> unsigned long long");
    assert_eq!(btf.size_of(request_ptr(&btf)), Some(8));
    assert_eq!(btf.size_of(btf.find("gendisk", KindTag::Struct).unwrap()), Some(56));
    let queues = resolve(&btf, "queues");
    assert!(queues.is_err());
    let field = btf.struct_members(3).unwrap().into_iter().find(|f| f.name == "queues").unwrap();
    assert_eq!(btf.size_of(field.ty), Some(48));
    assert_eq!(btf.size_of(0), None);
    assert_eq!(btf.size_of(29), None, "a forward declaration has no size");
}

#[test]
fn c_type_names_read_as_c() {
    let btf = fixture();
    let c_types: Vec<(String, String)> =
        btf.struct_members(request_ptr(&btf)).unwrap().into_iter().map(|f| (f.name, f.c_type)).collect();
    let c_types: Vec<(&str, &str)> = c_types.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect();
    assert_eq!(
        c_types,
        [
            ("q", "struct request_queue *"),
            ("cmd_flags", "unsigned int"),
            ("tag", "int"),
            ("__data_len", "unsigned int"),
            ("__sector", "sector_t"),
            ("queuelist", "struct list_head"),
            ("priv", "void *"),
            ("llist_pad", "signed char"),
            ("ioprio", "unsigned int"),
            ("nr_phys", "unsigned int"),
            ("timed_out", "bool"),
            ("op", "enum req_op"),
            ("sign", "enum sign_test"),
            ("deadline", "const volatile long"),
            ("end_io", "void (*)(struct request *, blk_status_t)"),
            ("lh", "struct list_head"),
            ("hidden", "struct hidden *"),
            ("hidden_union", "union hidden_union *"),
            ("pp", "struct request **"),
            ("load", "float"),
            ("name_ptr", "char (*)[16]"),
            ("wide", "__int128"),
            ("uptr", "u64 *"),
            ("tagged", "int"),
            ("label", "const char *restrict"),
            ("queues", "struct request_queue[2]"),
        ]
    );
    assert_eq!(btf.c_type_name(10), "union {...}");
    assert_eq!(btf.c_type_name(51), "btf_trace_block_rq_complete");
    assert_eq!(btf.c_type_name(52), "void (*)(void *, struct request *, blk_status_t, unsigned int)");
    assert_eq!(btf.c_type_name(56), "void (*)(void *, u32, u64)");
    assert_eq!(
        btf.c_type_name(50),
        "void __probestub_block_rq_complete(void *, struct request *, blk_status_t, unsigned int)"
    );
    assert_eq!(btf.c_type_name(0), "void");
}

#[test]
fn members_flatten_anonymous_containers_with_their_offsets() {
    let btf = fixture();
    let fields = btf.struct_members(3).unwrap();
    let at = |name: &str| fields.iter().find(|f| f.name == name).map(|f| (f.offset_bits, f.bitfield_bits)).unwrap();
    assert_eq!(at("queuelist"), (256, None));
    assert_eq!(at("priv"), (256, None));
    assert_eq!(at("llist_pad"), (320, None));
    assert_eq!(at("ioprio"), (384, Some(3)));
    assert_eq!(at("nr_phys"), (387, Some(13)));
    assert_eq!(at("timed_out"), (416, None));
    assert_eq!(btf.struct_members(5), None, "unsigned int has no members");
    assert_eq!(btf.struct_members(29), None, "a forward declaration has no members");
}

#[test]
fn tracepoint_args_come_from_the_btf_trace_typedef() {
    let btf = fixture();
    let args: Vec<(String, TypeId, String)> =
        btf.tracepoint_args("block_rq_complete").unwrap().into_iter().map(|a| (a.name, a.ty, a.c_type)).collect();
    assert_eq!(
        args,
        [
            ("rq".into(), 2, "struct request *".into()),
            ("error".into(), 25, "blk_status_t".into()),
            ("nr_bytes".into(), 5, "unsigned int".into())
        ]
    );
    // No __probestub_nameless: the names are positional.
    let args: Vec<(String, String)> =
        btf.tracepoint_args("nameless").unwrap().into_iter().map(|a| (a.name, a.c_type)).collect();
    assert_eq!(args, [("arg0".into(), "u32".into()), ("arg1".into(), "u64".into())]);
    assert_eq!(btf.tracepoint_args("block_rq_issue"), None);
    assert_eq!(btf.tracepoint_args(""), None);
}

#[test]
fn a_path_through_pointers_is_a_chain_of_dereferences() {
    let btf = fixture();
    let path = resolve(&btf, "q.disk.disk_name").unwrap();
    let queue = btf.find("request_queue", KindTag::Struct).unwrap();
    let gendisk = btf.find("gendisk", KindTag::Struct).unwrap();
    let hops: Vec<(&str, bool, TypeId, u32)> =
        path.hops.iter().map(|h| (h.member.as_str(), h.deref, h.container, h.offset_bits)).collect();
    assert_eq!(hops, [("q", true, 3, 0), ("disk", true, queue, 64), ("disk_name", true, gendisk, 64)]);
    assert_eq!(path.leaf, LeafType::CharArray { len: 32 });
    assert_eq!(path.leaf.data_type(), crate::types::DataType::Str { cap: 33 });
    assert_eq!(btf.c_type_name(path.ty), "char[32]");
    assert_eq!(path.c_access("rq"), "rq->q->disk->disk_name");
    // A member of an embedded struct adds to its container's offset.
    let path = resolve(&btf, "queuelist.prev").unwrap();
    let hops: Vec<(bool, u32)> = path.hops.iter().map(|h| (h.deref, h.offset_bits)).collect();
    assert_eq!(hops, [(true, 256), (false, 64)]);
    assert_eq!(path.c_access("rq"), "rq->queuelist.prev");
    assert_eq!(path.leaf, LeafType::Pointer);
    // The empty path is the argument itself.
    let path = resolve(&btf, "").unwrap();
    assert_eq!((path.hops.len(), path.ty, path.leaf), (0, 2, LeafType::Pointer));
}

#[test]
fn leaves_say_which_sql_value_they_become() {
    let btf = fixture();
    assert_eq!(leaf(&btf, "__data_len"), LeafType::Integer { bytes: 4, signed: false });
    assert_eq!(leaf(&btf, "tag"), LeafType::Integer { bytes: 4, signed: true });
    assert_eq!(leaf(&btf, "__sector"), LeafType::Integer { bytes: 8, signed: false });
    assert_eq!(leaf(&btf, "llist_pad"), LeafType::Integer { bytes: 1, signed: true });
    assert_eq!(leaf(&btf, "deadline"), LeafType::Integer { bytes: 8, signed: true });
    assert_eq!(leaf(&btf, "timed_out"), LeafType::Bool);
    assert_eq!(leaf(&btf, "op"), LeafType::Enum { bytes: 4, signed: false });
    assert_eq!(leaf(&btf, "q"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "priv"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "uptr"), LeafType::Pointer, "a type tag is seen through");
    assert_eq!(leaf(&btf, "label"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "name_ptr"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "pp"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "hidden"), LeafType::Pointer);
    assert_eq!(leaf(&btf, "q.disk.first_minor"), LeafType::Integer { bytes: 4, signed: true });
    assert_eq!(LeafType::Pointer.data_type(), crate::types::DataType::U64);
    assert_eq!(LeafType::Bool.data_type(), crate::types::DataType::Int { bits: 8, signed: false });
    assert_eq!(
        LeafType::Enum { bytes: 4, signed: true }.data_type(),
        crate::types::DataType::Int { bits: 32, signed: true }
    );
}

#[test]
fn leaves_without_a_column_type_are_refused_with_the_reason() {
    let btf = fixture();
    assert_eq!(refusal(&btf, "ioprio"), Unreadable::Bitfield { bits: 3 });
    assert_eq!(refusal(&btf, "nr_phys"), Unreadable::Bitfield { bits: 13 });
    assert_eq!(refusal(&btf, "end_io"), Unreadable::FunctionPointer);
    assert_eq!(refusal(&btf, "lh"), Unreadable::Struct);
    assert_eq!(refusal(&btf, "q.disk.addr"), Unreadable::Array { elem: "u8".into() });
    assert_eq!(refusal(&btf, "queues"), Unreadable::Array { elem: "struct request_queue".into() });
    assert_eq!(refusal(&btf, "load"), Unreadable::Float);
    assert_eq!(refusal(&btf, "wide"), Unreadable::WideInteger { bytes: 16 });
    assert_eq!(btf.classify(10), Err(Unreadable::Union));
    assert_eq!(btf.classify(29), Err(Unreadable::Incomplete));
    assert_eq!(btf.classify(0), Err(Unreadable::NoValue));
    let err = resolve(&btf, "lh").unwrap_err();
    assert_eq!(err.at(), Some(0));
    assert_eq!(
        err.to_string(),
        "`struct list_head` cannot be a column: it is a struct by value; name one of its members"
    );
    let err = resolve(&btf, "ioprio").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`unsigned int` cannot be a column: it is a 3-bit bitfield, which ebq does not read yet"
    );
}

#[test]
fn an_unknown_member_lists_the_members_and_the_closest() {
    let btf = fixture();
    let err = resolve(&btf, "q.dsk.disk_name").unwrap_err();
    assert_eq!(
        err,
        PathError::UnknownMember {
            at: 1,
            member: "dsk".into(),
            container: "struct request_queue".into(),
            members: vec!["queuedata".into(), "disk".into(), "queue_flags".into()],
            suggestions: vec!["disk".into()],
        }
    );
    assert_eq!(err.to_string(), "`struct request_queue` has no member `dsk`");
    let Err(PathError::UnknownMember { at: 0, members, suggestions, .. }) = resolve(&btf, "data_len") else { panic!() };
    assert_eq!(suggestions, ["__data_len"]);
    assert_eq!(members.len(), 26, "anonymous members are listed flattened");
    assert!(members.contains(&"llist_pad".to_string()));
    let Err(PathError::UnknownMember { suggestions, .. }) = resolve(&btf, "zzzzzzzz") else { panic!() };
    assert!(suggestions.is_empty());
}

#[test]
fn a_step_into_a_non_struct_names_the_type() {
    let btf = fixture();
    let err = resolve(&btf, "__data_len.x").unwrap_err();
    let expected = PathError::NoMembers { at: 1, member: "x".into(), c_type: "unsigned int".into() };
    assert_eq!(err, expected);
    assert_eq!(err.to_string(), "cannot read member `x` of `unsigned int`: it is not a struct or a pointer to one");
    let err = resolve(&btf, "pp.q").unwrap_err();
    assert_eq!(err, PathError::NoMembers { at: 1, member: "q".into(), c_type: "struct request **".into() });
    let err = resolve(&btf, "q.disk.disk_name.x").unwrap_err();
    assert_eq!(err.at(), Some(3));
    let err = resolve(&btf, "hidden.x").unwrap_err();
    assert_eq!(err, PathError::Incomplete { at: 1, member: "x".into(), c_type: "struct hidden *".into() });
    let err = resolve(&btf, "hidden_union.x").unwrap_err();
    assert_eq!(err, PathError::Incomplete { at: 1, member: "x".into(), c_type: "union hidden_union *".into() });
}

#[test]
fn every_truncation_is_an_error() {
    for len in 0..BLOB.len() {
        let err = Btf::parse(&BLOB[..len]).expect_err("a prefix of the blob is incomplete");
        if len < 24 {
            assert_eq!(err, BtfError::TooShort { len });
        }
    }
}

#[test]
fn header_errors_are_named() {
    let mut blob = BLOB.to_vec();
    blob[0] = 0;
    assert_eq!(Btf::parse(&blob).unwrap_err(), BtfError::BadMagic { magic: 0xeb00 });
    blob[0..2].copy_from_slice(&[0xeb, 0x9f]);
    assert_eq!(Btf::parse(&blob).unwrap_err(), BtfError::BigEndian);
    let mut blob = BLOB.to_vec();
    blob[2] = 2;
    assert_eq!(Btf::parse(&blob).unwrap_err(), BtfError::Version { version: 2 });
}

/// Overwrites every byte with values that break lengths, kinds, ids and names, and checks
/// that parsing and every query either work or fail, never panic or run away.
#[test]
fn corrupt_bytes_never_panic() {
    let mut parsed = 0;
    for at in 0..BLOB.len() {
        for value in [0x00, 0x01, 0x03, 0x7f, 0x80, 0xff] {
            let mut blob = BLOB.to_vec();
            blob[at] = value;
            let Ok(btf) = Btf::parse(&blob) else { continue };
            parsed += 1;
            for id in 0..btf.type_count() + 2 {
                let _ = (btf.c_type_name(id), btf.size_of(id), btf.classify(id), btf.struct_members(id));
                let _ = btf.resolve_path(id, &["q", "disk", "disk_name"]);
            }
            let _ = btf.tracepoint_args("block_rq_complete");
        }
    }
    assert!(parsed > 1000, "most single-byte changes (names, offsets) still parse: {parsed}");
}

/// A blob whose types refer to themselves still answers (bounded walks).
#[test]
fn self_referring_types_are_bounded() {
    // Patch `struct request`'s first member (type 4, `struct request_queue *`) and the
    // pointer type 4 so that it points to itself, and make member 6 (anonymous union, type 10)
    // refer to struct request itself.
    let btf = fixture();
    let mut blob = BLOB.to_vec();
    let hdr_len = u32::from_le_bytes(blob[4..8].try_into().unwrap()) as usize;
    let type_off = u32::from_le_bytes(blob[8..12].try_into().unwrap()) as usize;
    let types = hdr_len + type_off;
    // Types 1 and 2 are PTRs (12 bytes each); STRUCT request follows: 12 bytes, then members.
    let ptr1 = types;
    blob[ptr1 + 8..ptr1 + 12].copy_from_slice(&1u32.to_le_bytes());
    let request = types + 24;
    let anon_member = request + 12 + 5 * 12;
    blob[anon_member + 4..anon_member + 8].copy_from_slice(&3u32.to_le_bytes());
    let bad = Btf::parse(&blob).unwrap();
    assert_eq!(bad.kind(1), Kind::Ptr(1));
    assert_eq!(bad.skip_modifiers(1), 1);
    assert!(bad.c_type_name(1).starts_with("..."));
    assert_eq!(bad.size_of(1), Some(8));
    assert_eq!(bad.classify(1), Ok(LeafType::Pointer));
    let members = bad.struct_members(3).unwrap();
    assert!(members.len() > btf.struct_members(3).unwrap().len());
    assert!(bad.resolve_path(2, &["nonexistent"]).is_err());
}
