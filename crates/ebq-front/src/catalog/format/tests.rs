//! Unit tests for the format parser on hand-written and junk input.

use super::parse_format;
use crate::catalog::FieldKind;

const PREAD: &str = "name: sys_enter_pread64\nID: 838\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:unsigned int fd;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:char * buf;\toffset:24;\tsize:8;\tsigned:0;\n\n\
print fmt: \"fd: 0x%08lx\",\nREC->fd\nmore junk after print fmt\n";

#[test]
fn parses_header_and_drops_common_fields() {
    let f = parse_format("syscalls", PREAD).unwrap();
    assert_eq!((f.category.as_str(), f.name.as_str(), f.id), ("syscalls", "sys_enter_pread64", 838));
    let names: Vec<_> = f.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["__syscall_nr", "fd", "buf"]);
    let fd = f.field("fd").unwrap();
    assert_eq!((fd.c_type.as_str(), fd.offset, fd.size, fd.signed), ("unsigned int", 16, 4, false));
    assert_eq!(f.field("buf").unwrap().c_type, "char *");
    assert_eq!(f.field("buf").unwrap().kind, FieldKind::Int);
}

/// Parses a single field declaration with the given size, returning (name, c_type, kind).
fn one(decl: &str, size: u32) -> (String, String, FieldKind) {
    let text = format!("name: x\nID: 1\nformat:\n\tfield:{decl};\toffset:8;\tsize:{size};\tsigned:0;\n");
    let f = parse_format("c", &text).unwrap_or_else(|e| panic!("{decl}: {e:?}"));
    let field = f.fields.into_iter().next().unwrap();
    (field.name, field.c_type, field.kind)
}

#[test]
fn derives_kinds_and_c_types() {
    let cases = [
        ("__data_loc char[] cmd", 4, "cmd", "__data_loc char[]", FieldKind::DataLocStr),
        ("char comm[16]", 16, "comm", "char[16]", FieldKind::CharArray { len: 16 }),
        ("const char name[8]", 8, "name", "const char[8]", FieldKind::CharArray { len: 8 }),
        ("unsigned char mac[6]", 6, "mac", "unsigned char[6]", FieldKind::CharArray { len: 6 }),
        ("unsigned long args[6]", 48, "args", "unsigned long[6]", FieldKind::IntArray { elem_size: 8, len: 6 }),
        ("u8 saddr[16]", 16, "saddr", "u8[16]", FieldKind::IntArray { elem_size: 1, len: 16 }),
        ("unsigned long args[]", 0, "args", "unsigned long[]", FieldKind::Unsupported),
        ("char buf[]", 0, "buf", "char[]", FieldKind::Unsupported),
        ("u32 x[N]", 16, "x", "u32[N]", FieldKind::Unsupported),
        ("u32 x[3]", 16, "x", "u32[3]", FieldKind::Unsupported),
        ("__data_loc u64[] ids", 4, "ids", "__data_loc u64[]", FieldKind::Unsupported),
        ("__data_loc cpumask_t mask", 4, "mask", "__data_loc cpumask_t", FieldKind::Unsupported),
        ("unsigned int flag:3", 4, "flag", "unsigned int", FieldKind::Unsupported),
        ("struct foo bar", 8, "bar", "struct foo", FieldKind::Unsupported),
        ("const struct timespec * tp", 8, "tp", "const struct timespec *", FieldKind::Int),
        ("pid_t  pid", 4, "pid", "pid_t", FieldKind::Int),
        ("bool ok", 1, "ok", "bool", FieldKind::Int),
        ("u128 big", 16, "big", "u128", FieldKind::Unsupported),
    ];
    for (decl, size, name, c_type, kind) in cases {
        assert_eq!(one(decl, size), (name.to_string(), c_type.to_string(), kind), "{decl}");
    }
}

#[test]
fn reports_line_numbers() {
    let bad_offset = "name: x\nID: 1\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\tsigned:1;\n";
    assert_eq!(parse_format("c", bad_offset).unwrap_err().0, 4);
    assert_eq!(parse_format("c", "name: x\nID: nope\n").unwrap_err().0, 2);
    assert!(parse_format("c", "ID: 3\n").unwrap_err().1.contains("name"));
    assert!(parse_format("c", "name: x\n").unwrap_err().1.contains("ID"));
    let no_size = "name: x\nID: 1\n\tfield:int a;\toffset:8;\n";
    assert_eq!(parse_format("c", no_size).unwrap_err(), (3, "field without `size:`".into()));
}

#[test]
fn never_panics_on_junk() {
    let lines = [
        "",
        "name:",
        "ID:",
        "ID: 99999999999",
        "field:",
        "field:;",
        "field:]",
        "field:[",
        "field:int",
        "field:int [",
        "field:int a[",
        "field:a]",
        "field:int 9a;offset:1;size:1;",
        "field:int a;offset:;size:;signed:;",
        "field:int a;offset:1;size:1;signed:x;",
        "field:int a;offset",
        "field:__data_loc",
        "field:__data_loc ;offset:0;size:4;",
        "field:é ü[ß];offset:0;size:4;",
        "field:int a:;offset:0;size:4;",
        "\u{0}\u{ffff}",
        "field:int a;\toffset:4294967296;\tsize:1;",
        "format:",
        "print fmt:",
    ];
    let mut text = String::from("name: x\nID: 1\n");
    for l in lines {
        text.push_str(l);
        text.push('\n');
        let _ = parse_format("c", l);
        let _ = parse_format("c", &format!("name: x\nID: 1\n{l}\n"));
    }
    // Every prefix (on char boundaries) of a real file.
    for (i, _) in PREAD.char_indices() {
        let _ = parse_format("c", &PREAD[..i]);
    }
    let _ = parse_format("c", &text);
}
