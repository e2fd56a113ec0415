//! The BTF wire format: a header, a type section and a string section
//! (<https://docs.kernel.org/bpf/btf.html>), decoded into [`Btf`] in one pass.
//!
//! Every read is bounds-checked and every type reference and name offset is checked
//! before [`Btf::parse`] returns, so the rest of the module may index by type id.

use super::error::BtfError;
use super::types::{Composite, Enum, EnumValue, Int, Kind, List, Member, Param, SectionVar, Type, TypeId};
use super::Btf;

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;

/// Little-endian u32 reads from a byte slice that fail instead of panicking.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn u32(&mut self) -> Option<u32> {
        let b = self.bytes.get(self.pos..self.pos.checked_add(4)?)?;
        self.pos += 4;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn header_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The byte range `off..off+len` of `data`, if it lies inside.
fn section<'a>(data: &'a [u8], off: u32, len: u32, reason: &'static str) -> Result<&'a [u8], BtfError> {
    let start = off as usize;
    let end = start.checked_add(len as usize).ok_or(BtfError::Header { reason })?;
    data.get(start..end).ok_or(BtfError::Header { reason })
}

/// Parses a whole blob (see [`Btf::parse`]).
pub(super) fn parse(bytes: &[u8]) -> Result<Btf, BtfError> {
    if bytes.len() < HEADER_LEN {
        return Err(BtfError::TooShort { len: bytes.len() });
    }
    let magic = u16::from_le_bytes([bytes[0], bytes[1]]);
    if magic == MAGIC.swap_bytes() {
        return Err(BtfError::BigEndian);
    }
    if magic != MAGIC {
        return Err(BtfError::BadMagic { magic });
    }
    if bytes[2] != 1 {
        return Err(BtfError::Version { version: bytes[2] });
    }
    let hdr_len = header_u32(bytes, 4) as usize;
    if hdr_len < HEADER_LEN || hdr_len > bytes.len() {
        return Err(BtfError::Header { reason: "header length outside the blob" });
    }
    let data = &bytes[hdr_len..];
    let type_off = header_u32(bytes, 8);
    if !type_off.is_multiple_of(4) {
        return Err(BtfError::Header { reason: "type section not 4-byte aligned" });
    }
    let type_sec = section(data, type_off, header_u32(bytes, 12), "type section outside the blob")?;
    let str_sec = section(data, header_u32(bytes, 16), header_u32(bytes, 20), "string section outside the blob")?;
    let strings = check_strings(str_sec)?;
    let mut btf = Btf {
        strings: strings.into(),
        types: vec![Type { name_off: 0, kind: Kind::Void }],
        members: Vec::new(),
        params: Vec::new(),
        enum_values: Vec::new(),
        section_vars: Vec::new(),
        index: Default::default(),
    };
    let mut r = Reader { bytes: type_sec, pos: 0 };
    while r.pos < type_sec.len() {
        let id = btf.types.len() as TypeId;
        let offset = r.pos;
        let ty = read_type(&mut r, &mut btf, id).ok_or(BtfError::Truncated { id, offset })??;
        btf.types.push(ty);
    }
    check(&btf)?;
    Ok(btf)
}

fn check_strings(sec: &[u8]) -> Result<&str, BtfError> {
    if sec.first() != Some(&0) {
        return Err(BtfError::Strings { reason: "does not start with the empty string" });
    }
    if sec.last() != Some(&0) {
        return Err(BtfError::Strings { reason: "last string is not NUL-terminated" });
    }
    std::str::from_utf8(sec).map_err(|_| BtfError::Strings { reason: "not UTF-8" })
}

/// Reads one type and its trailing data. `None`: the section ended inside it.
fn read_type(r: &mut Reader, btf: &mut Btf, id: TypeId) -> Option<Result<Type, BtfError>> {
    let name_off = r.u32()?;
    let info = r.u32()?;
    let size_or_type = r.u32()?;
    let vlen = info & 0xffff;
    let kind_flag = info >> 31 == 1;
    let kind = match (info >> 24) & 0x1f {
        1 => match read_int(r.u32()?, size_or_type, id) {
            Ok(int) => Kind::Int(int),
            Err(e) => return Some(Err(e)),
        },
        2 => Kind::Ptr(size_or_type),
        3 => Kind::Array { elem: r.u32()?, index: r.u32()?, len: r.u32()? },
        k @ (4 | 5) => {
            let start = btf.members.len() as u32;
            for _ in 0..vlen {
                let (name_off, ty, offset) = (r.u32()?, r.u32()?, r.u32()?);
                let (offset_bits, bitfield_bits) =
                    if kind_flag { (offset & 0xff_ffff, (offset >> 24) as u8) } else { (offset, 0) };
                btf.members.push(Member { name_off, ty, offset_bits, bitfield_bits });
            }
            let c = Composite { size: size_or_type, members: List { start, len: vlen } };
            if k == 4 {
                Kind::Struct(c)
            } else {
                Kind::Union(c)
            }
        }
        k @ (6 | 19) => {
            let start = btf.enum_values.len() as u32;
            for _ in 0..vlen {
                let name_off = r.u32()?;
                let value = if k == 6 {
                    // ENUM keeps 32 bits; sign-extend signed ones so they read back as i64.
                    let v = r.u32()?;
                    if kind_flag {
                        v as i32 as i64 as u64
                    } else {
                        v as u64
                    }
                } else {
                    let lo = r.u32()? as u64;
                    lo | (r.u32()? as u64) << 32
                };
                btf.enum_values.push(EnumValue { name_off, value });
            }
            let values = List { start, len: vlen };
            Kind::Enum(Enum { size: size_or_type, signed: kind_flag, wide: k == 19, values })
        }
        7 => Kind::Fwd { union: kind_flag },
        8 => Kind::Typedef(size_or_type),
        9 => Kind::Volatile(size_or_type),
        10 => Kind::Const(size_or_type),
        11 => Kind::Restrict(size_or_type),
        12 => Kind::Func { proto: size_or_type, linkage: vlen as u16 },
        13 => {
            let start = btf.params.len() as u32;
            for _ in 0..vlen {
                btf.params.push(Param { name_off: r.u32()?, ty: r.u32()? });
            }
            Kind::FuncProto { ret: size_or_type, params: List { start, len: vlen } }
        }
        14 => Kind::Var { ty: size_or_type, linkage: r.u32()? },
        15 => {
            let start = btf.section_vars.len() as u32;
            for _ in 0..vlen {
                btf.section_vars.push(SectionVar { ty: r.u32()?, offset: r.u32()?, size: r.u32()? });
            }
            Kind::Datasec { size: size_or_type, vars: List { start, len: vlen } }
        }
        16 => Kind::Float { size: size_or_type },
        17 => Kind::DeclTag { ty: size_or_type, component: r.u32()? as i32 },
        18 => Kind::TypeTag(size_or_type),
        kind => return Some(Err(BtfError::UnknownKind { id, kind })),
    };
    Some(Ok(Type { name_off, kind }))
}

fn read_int(word: u32, size: u32, id: TypeId) -> Result<Int, BtfError> {
    let encoding = (word >> 24) & 0xf;
    let bit_offset = ((word >> 16) & 0xff) as u8;
    let bits = (word & 0xff) as u8;
    if !matches!(size, 1 | 2 | 4 | 8 | 16) {
        return Err(BtfError::BadInt { id, reason: "size is not 1, 2, 4, 8 or 16 bytes" });
    }
    if bits == 0 || bit_offset as u32 + bits as u32 > size * 8 {
        return Err(BtfError::BadInt { id, reason: "value bits do not fit its size" });
    }
    Ok(Int { size, signed: encoding & 1 != 0, char: encoding & 2 != 0, bool: encoding & 4 != 0, bit_offset, bits })
}

/// Checks every name offset and type reference, so lookups may index without checks.
fn check(btf: &Btf) -> Result<(), BtfError> {
    let count = btf.types.len() as u32;
    for (id, ty) in btf.types.iter().enumerate().skip(1) {
        let id = id as TypeId;
        let name = |name_off: u32| {
            let ok = (name_off as usize) < btf.strings.len() && btf.strings.is_char_boundary(name_off as usize);
            if ok {
                Ok(())
            } else {
                Err(BtfError::BadName { id, name_off })
            }
        };
        let refer =
            |target: TypeId| if target < count { Ok(()) } else { Err(BtfError::BadTypeRef { id, target, count }) };
        name(ty.name_off)?;
        match ty.kind {
            Kind::Void | Kind::Int(_) | Kind::Fwd { .. } | Kind::Float { .. } => {}
            Kind::Ptr(t)
            | Kind::Typedef(t)
            | Kind::Volatile(t)
            | Kind::Const(t)
            | Kind::Restrict(t)
            | Kind::TypeTag(t)
            | Kind::Func { proto: t, .. }
            | Kind::Var { ty: t, .. }
            | Kind::DeclTag { ty: t, .. } => refer(t)?,
            Kind::Array { elem, index, .. } => {
                refer(elem)?;
                refer(index)?;
            }
            Kind::Struct(c) | Kind::Union(c) => {
                for m in &btf.members[c.members.range()] {
                    name(m.name_off)?;
                    refer(m.ty)?;
                }
            }
            Kind::Enum(e) => {
                for v in &btf.enum_values[e.values.range()] {
                    name(v.name_off)?;
                }
            }
            Kind::FuncProto { ret, params } => {
                refer(ret)?;
                for p in &btf.params[params.range()] {
                    name(p.name_off)?;
                    refer(p.ty)?;
                }
            }
            Kind::Datasec { vars, .. } => {
                for v in &btf.section_vars[vars.range()] {
                    refer(v.ty)?;
                }
            }
        }
    }
    Ok(())
}
