//! Why a BTF blob could not be read. Every check the parser makes has its own variant,
//! so a corrupt or truncated blob says where it went wrong instead of panicking.

use super::TypeId;

/// A BTF blob that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BtfError {
    /// Fewer bytes than the 24-byte header.
    #[error("BTF is {len} bytes, shorter than its 24-byte header")]
    TooShort {
        /// Bytes given.
        len: usize,
    },
    /// The first two bytes are not 0xeB9F in either byte order.
    #[error("not BTF: magic {magic:#06x}, expected 0xeb9f")]
    BadMagic {
        /// The first two bytes, little-endian.
        magic: u16,
    },
    /// Big-endian BTF (from a big-endian target); ebq reads the host's little-endian BTF.
    #[error("big-endian BTF is not supported")]
    BigEndian,
    /// A format version other than 1.
    #[error("BTF version {version} is not supported (only 1)")]
    Version {
        /// The version byte.
        version: u8,
    },
    /// The header's lengths or offsets point outside the blob or are misaligned.
    #[error("BTF header is inconsistent: {reason}")]
    Header {
        /// What is wrong.
        reason: &'static str,
    },
    /// The string section is not NUL-delimited UTF-8 starting with an empty string.
    #[error("BTF string section is malformed: {reason}")]
    Strings {
        /// What is wrong.
        reason: &'static str,
    },
    /// The type section ends inside a type.
    #[error("BTF type section ends inside type {id} (at byte {offset} of the section)")]
    Truncated {
        /// The type being read.
        id: TypeId,
        /// Its start in the type section.
        offset: usize,
    },
    /// A kind number this parser does not know.
    #[error("BTF type {id} has unknown kind {kind}")]
    UnknownKind {
        /// The type.
        id: TypeId,
        /// Its kind number.
        kind: u32,
    },
    /// A name offset outside the string section or inside a character.
    #[error("BTF type {id} names string offset {name_off}, which is not the start of a string")]
    BadName {
        /// The type (or the type whose member, parameter or enumerator it is).
        id: TypeId,
        /// The offset.
        name_off: u32,
    },
    /// A reference to a type id that does not exist.
    #[error("BTF type {id} refers to type {target}, but there are only {count} types")]
    BadTypeRef {
        /// The referring type.
        id: TypeId,
        /// The missing id.
        target: TypeId,
        /// Number of type ids, void included.
        count: u32,
    },
    /// An INT whose size or bit layout is impossible.
    #[error("BTF type {id} is an INT with impossible layout: {reason}")]
    BadInt {
        /// The type.
        id: TypeId,
        /// What is wrong.
        reason: &'static str,
    },
}
