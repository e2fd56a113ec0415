//! USDT probe sites: the `.note.stapsdt` notes `<sys/sdt.h>` leaves in a binary.
//!
//! Each `STAP_PROBE…` expands to a `nop` and one ELF note (owner `stapsdt`,
//! type 3) whose descriptor holds three addresses and three strings:
//!
//! ```text
//! pc (8)  base (8)  semaphore (8)  provider\0  name\0  argument spec\0
//! ```
//!
//! `pc` is the `nop`'s link-time address; `base` the link-time address of the
//! `.stapsdt.base` section, so that when a prelinker moved the binary, the
//! difference between that section's actual address and `base` moves `pc` and
//! the semaphore too; `semaphore` is the address of the `unsigned short` the
//! program tests before building the arguments (0: the probe is unguarded).
//! The kernel wants file offsets (a uprobe sits on an inode; its reference
//! counter, the semaphore, too), computed through the loadable segment that
//! holds each address, as libbpf does.
//!
//! [`parse_notes`] works on a note section's bytes and [`ElfLayout`] on the
//! numbers, so both are tested without a binary; [`usdt_sites`] reads a file.

use super::elf::{read_elf, ElfError};
use object::{Object, ObjectSection, ObjectSegment};
use std::path::Path;

/// One probe site, as the note says it, addresses already made file offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsdtSite {
    /// Provider (`postgresql`).
    pub provider: String,
    /// Probe name (`smgr__md__read__start`).
    pub name: String,
    /// File offset of the probe's `nop` (where the uprobe goes).
    pub offset: u64,
    /// File offset of the semaphore, 0 when the probe has none.
    pub semaphore: u64,
    /// The argument spec, operands separated by spaces (`-4@%esi 8@-16(%rbp) -4@$5`).
    pub args: String,
}

/// A note as stored: link-time addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawNote {
    /// Address of the probe's `nop`.
    pub pc: u64,
    /// Link-time address of `.stapsdt.base`.
    pub base: u64,
    /// Address of the semaphore, 0 for none.
    pub semaphore: u64,
    /// Provider.
    pub provider: String,
    /// Name.
    pub name: String,
    /// Argument spec.
    pub args: String,
}

/// The parts of an ELF file that place a note: its loadable segments and the
/// actual address of `.stapsdt.base`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfLayout {
    /// `(virtual address, size in memory, file offset)` of each loadable segment.
    pub segments: Vec<(u64, u64, u64)>,
    /// The address of `.stapsdt.base`, if the file has one.
    pub stapsdt_base: Option<u64>,
}

const NT_STAPSDT: u32 = 3;

/// The `stapsdt` notes in the bytes of a `.note.stapsdt` section (little
/// endian, 64-bit); other owners and types are skipped, a truncated note ends the list.
pub fn parse_notes(data: &[u8]) -> Vec<RawNote> {
    let u32_at = |at: usize| data.get(at..at + 4).map(|b| u32::from_le_bytes(b.try_into().unwrap()));
    let align = |n: usize| (n + 3) & !3;
    let mut out = vec![];
    let mut at = 0;
    while let (Some(namesz), Some(descsz), Some(kind)) = (u32_at(at), u32_at(at + 4), u32_at(at + 8)) {
        let (namesz, descsz) = (namesz as usize, descsz as usize);
        let name_at = at + 12;
        let desc_at = name_at + align(namesz);
        let Some(desc) = data.get(desc_at..desc_at + descsz) else { break };
        let owner = data.get(name_at..name_at + namesz).unwrap_or_default();
        at = desc_at + align(descsz);
        if kind != NT_STAPSDT || owner != b"stapsdt\0" || desc.len() < 24 {
            continue;
        }
        let addr = |i: usize| u64::from_le_bytes(desc[i * 8..i * 8 + 8].try_into().unwrap());
        let mut strings = desc[24..].split(|&b| b == 0).map(|s| String::from_utf8_lossy(s).into_owned());
        let (Some(provider), Some(name)) = (strings.next(), strings.next()) else { continue };
        let args = strings.next().unwrap_or_default();
        out.push(RawNote { pc: addr(0), base: addr(1), semaphore: addr(2), provider, name, args });
    }
    out
}

impl ElfLayout {
    /// The file offset of `address`, through the loadable segment holding it.
    pub fn file_offset(&self, address: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(vaddr, size, _)| *vaddr <= address && address < vaddr + size)
            .map(|(vaddr, _, offset)| address - vaddr + offset)
    }

    /// A note's site: addresses moved by the prelink shift (`.stapsdt.base`'s
    /// actual address minus the note's `base`), then made file offsets.
    pub fn site(&self, note: &RawNote) -> Result<UsdtSite, String> {
        let shift = |a: u64| match self.stapsdt_base {
            Some(actual) if note.base != 0 && a != 0 => a.wrapping_add(actual).wrapping_sub(note.base),
            _ => a,
        };
        let pc = shift(note.pc);
        let offset = self
            .file_offset(pc)
            .ok_or_else(|| format!("probe {}:{} at {pc:#x} lies in no loadable segment", note.provider, note.name))?;
        let semaphore = match shift(note.semaphore) {
            0 => 0,
            s => self.file_offset(s).ok_or_else(|| {
                format!("the semaphore of {}:{} at {s:#x} lies in no loadable segment", note.provider, note.name)
            })?,
        };
        Ok(UsdtSite {
            provider: note.provider.clone(),
            name: note.name.clone(),
            offset,
            semaphore,
            args: note.args.clone(),
        })
    }
}

/// Every USDT probe site of the ELF file `path`, in note order (empty when it has none).
pub fn usdt_sites(path: &Path) -> Result<Vec<UsdtSite>, ElfError> {
    let data = read_elf(path)?;
    let file = object::File::parse(&*data)
        .map_err(|e| ElfError::NotElf(format!("{} is not an ELF object ebq can read: {e}", path.display())))?;
    if !file.is_64() || !file.is_little_endian() {
        return Err(ElfError::NotElf(format!(
            "{}: ebq reads USDT notes of 64-bit x86-64 objects only",
            path.display()
        )));
    }
    let Some(notes) = file.section_by_name(".note.stapsdt") else { return Ok(vec![]) };
    let bytes = notes.data().map_err(|e| ElfError::NotElf(format!("{}: .note.stapsdt: {e}", path.display())))?;
    let layout = ElfLayout {
        segments: file.segments().map(|s| (s.address(), s.size(), s.file_range().0)).collect(),
        stapsdt_base: file.section_by_name(".stapsdt.base").map(|s| s.address()),
    };
    parse_notes(bytes)
        .iter()
        .map(|n| layout.site(n))
        .collect::<Result<_, _>>()
        .map_err(|why| ElfError::NotElf(format!("{}: {why}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One note's bytes, as the assembler lays it out.
    fn note(pc: u64, base: u64, sema: u64, strings: &[&str]) -> Vec<u8> {
        let mut desc = [pc, base, sema].iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<u8>>();
        for s in strings {
            desc.extend_from_slice(s.as_bytes());
            desc.push(0);
        }
        let mut out = vec![];
        out.extend_from_slice(&8u32.to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&NT_STAPSDT.to_le_bytes());
        out.extend_from_slice(b"stapsdt\0");
        let len = desc.len();
        out.extend(desc);
        out.resize(out.len() + (4 - len % 4) % 4, 0);
        out
    }

    #[test]
    fn notes_and_their_offsets() {
        // postgres 15 on Debian: smgr__md__read__start (guarded), then an unguarded probe without arguments.
        let mut bytes = note(
            0x46d21d,
            0x792ea0,
            0x885926,
            &["postgresql", "smgr__md__read__start", "-4@%esi 4@%edx 4@(%rdi) 4@4(%rdi) 4@8(%rdi) -4@12(%rdi)"],
        );
        // A note of another owner in between is skipped.
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&4u32.to_le_bytes());
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(b"GNU\0abcd");
        bytes.extend(note(0x1139, 0x2004, 0, &["t", "plain"]));
        let notes = parse_notes(&bytes);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!((notes[0].pc, notes[0].base, notes[0].semaphore), (0x46d21d, 0x792ea0, 0x885926));
        assert_eq!((notes[0].provider.as_str(), notes[0].name.as_str()), ("postgresql", "smgr__md__read__start"));
        assert!(notes[0].args.ends_with("-4@12(%rdi)"));
        assert_eq!((notes[1].name.as_str(), notes[1].args.as_str()), ("plain", ""));

        // Text at 0x1000 from file offset 0x1000; data at 0x884000 from file offset 0x883000.
        let layout = ElfLayout {
            segments: vec![(0, 0x1000, 0), (0x1000, 0x800000, 0x1000), (0x884000, 0x4000, 0x883000)],
            stapsdt_base: Some(0x792ea0),
        };
        let site = layout.site(&notes[0]).unwrap();
        assert_eq!((site.offset, site.semaphore), (0x46d21d, 0x885926 - 0x884000 + 0x883000));
        // Prelinked 0x10000 higher: pc and semaphore follow .stapsdt.base.
        let moved = ElfLayout {
            segments: vec![(0x10000, 0x1000, 0), (0x11000, 0x800000, 0x1000), (0x894000, 0x4000, 0x883000)],
            stapsdt_base: Some(0x7a2ea0),
        };
        assert_eq!(moved.site(&notes[0]).unwrap(), site);
        let bad = RawNote { pc: 0x9000000, ..notes[0].clone() };
        assert!(layout.site(&bad).unwrap_err().contains("no loadable segment"));
    }

    #[test]
    fn truncated_notes_end_the_list() {
        let bytes = note(1, 2, 3, &["p", "n", "8@%rax"]);
        assert_eq!(parse_notes(&bytes[..bytes.len() - 12]), vec![]);
        assert_eq!(parse_notes(&[]), vec![]);
    }
}
