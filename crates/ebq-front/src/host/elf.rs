//! User-space binaries for uprobes: which file a name means, and where in it a
//! symbol's code starts.
//!
//! The kernel places a uprobe at a *file offset* of an inode, not at a virtual
//! address, so a symbol's address (`st_value`) is mapped back through the
//! loadable segment that contains it: `offset = addr - p_vaddr + p_offset`.
//! This is what libbpf and perf compute, and it holds for shared objects, PIE
//! and non-PIE executables alike (for the latter `p_vaddr` is absolute).

use crate::suggest::closest;
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use std::path::{Path, PathBuf};

/// A resolved uprobe target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfSymbol {
    /// The file, canonical (symlinks such as `libc.so.6` resolved).
    pub path: PathBuf,
    /// The symbol's virtual address in the file.
    pub address: u64,
    /// The file offset the kernel attaches at.
    pub offset: u64,
}

/// Why a uprobe target could not be resolved; the binder turns each into a
/// positioned error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElfError {
    /// No such file (after the library search).
    NoFile {
        /// Where ebq looked.
        looked: Vec<String>,
    },
    /// The file is not an ELF object ebq can read.
    NotElf(String),
    /// The file calls the function but does not define it: it comes from a
    /// shared library (the PLT stub is not the function).
    Imported,
    /// The file has no function of that name.
    NoSymbol {
        /// Closest function names, best first.
        suggestions: Vec<String>,
    },
}

/// Directories searched for a bare library name, in ld.so's order: those
/// configured in `/etc/ld.so.conf.d/*.conf` (which ld.so's cache is built
/// from), then its defaults on Debian-style multiarch systems.
fn library_dirs() -> Vec<PathBuf> {
    let mut confs: Vec<PathBuf> = std::fs::read_dir("/etc/ld.so.conf.d")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.extension().is_some_and(|x| x == "conf")).collect()
        })
        .unwrap_or_default();
    confs.sort();
    let mut dirs: Vec<PathBuf> = confs
        .iter()
        .filter_map(|c| std::fs::read_to_string(c).ok())
        .flat_map(|text| {
            text.lines().map(str::trim).filter(|l| l.starts_with('/')).map(PathBuf::from).collect::<Vec<_>>()
        })
        .collect();
    for d in default_library_dirs() {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

fn default_library_dirs() -> Vec<PathBuf> {
    let triple = match std::env::consts::ARCH {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        other => other,
    };
    [
        format!("/lib/{triple}"),
        format!("/usr/lib/{triple}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
        "/usr/local/lib".into(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

/// The file `name` means: a path (anything with a `/`) as is, else a library
/// in the standard directories: `libc.so.6` exactly, `libc` / `c` as
/// `libc.so*` (the versioned name the loader uses is preferred over the
/// development symlink).
pub fn resolve_binary(name: &str) -> Result<PathBuf, ElfError> {
    if name.contains('/') {
        let p = Path::new(name);
        return match p.canonicalize() {
            Ok(c) if c.is_file() => Ok(c),
            _ => Err(ElfError::NoFile { looked: vec![name.to_string()] }),
        };
    }
    let stem = if name.starts_with("lib") { name.to_string() } else { format!("lib{name}") };
    let mut looked = vec![];
    for dir in library_dirs() {
        looked.push(dir.display().to_string());
        let exact = dir.join(name);
        if name.contains(".so") && exact.is_file() {
            return exact.canonicalize().map_err(|_| ElfError::NoFile { looked: vec![name.into()] });
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|f| f.strip_prefix(&stem).is_some_and(|rest| rest.starts_with(".so")))
            .collect();
        // `libc.so.6` before `libc.so` (often a linker script) and `libc.so.6.0.1`.
        found.sort_by_key(|f| (f.matches('.').count() != 2, f.len()));
        for f in found {
            let p = dir.join(&f);
            if is_native_elf(&p) {
                return p.canonicalize().map_err(|_| ElfError::NoFile { looked: vec![name.into()] });
            }
        }
    }
    Err(ElfError::NoFile { looked })
}

/// Largest binary ebq reads to find a symbol.
const MAX_ELF_BYTES: u64 = 4 << 30;

/// A 64-bit ELF file (a 32-bit compat library of the same name is skipped:
/// ebq maps the x86-64 calling convention).
fn is_native_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut ident = [0u8; 5];
    std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut ident)).is_ok() && ident == *b"\x7fELF\x02"
}

fn is_elf(p: &Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(p).and_then(|mut f| f.read_exact(&mut magic)).is_ok() && magic == *b"\x7fELF"
}

/// The bytes of the ELF file `path`. Device files, /proc/kcore (an ELF file
/// of the size of the address space) and the like are never read.
pub fn read_elf(path: &Path) -> Result<Vec<u8>, ElfError> {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if !is_elf(path) || size > MAX_ELF_BYTES {
        return Err(ElfError::NotElf(format!("{} is not an ELF object ebq can read", path.display())));
    }
    std::fs::read(path).map_err(|e| ElfError::NotElf(format!("cannot read {}: {e}", path.display())))
}

/// A function defined in the object (not an import): what a probe can attach
/// to and what a stack frame can be named after.
pub fn is_defined_function<'d, S: ObjectSymbol<'d>>(s: &S) -> bool {
    s.kind() == SymbolKind::Text && !s.is_undefined() && s.address() != 0
}

/// A data object defined in an ELF file (`STT_OBJECT`): what user space reads
/// to learn a library's layout (Open MPI's predefined datatypes, whose `size`
/// field locates the size in every datatype a program passes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSymbol {
    /// The object's virtual address in the file (at run time: plus the load bias).
    pub address: u64,
    /// Its initial contents as the file holds them; `None` for `.bss` objects.
    pub bytes: Option<Vec<u8>>,
    /// The virtual address of the file's GOT slot for it (a `GLOB_DAT`
    /// relocation): where the dynamic linker wrote the object's run-time
    /// address, which is not the file's own copy when the executable
    /// copy-relocated it (a program using `MPI_COMM_SELF` does).
    pub got_slot: Option<u64>,
}

/// The data objects `names` of `path` (dynamic symbols first, then
/// `.symtab`), each `None` when the file does not define it.
pub fn data_symbols(path: &Path, names: &[&str]) -> Result<Vec<Option<DataSymbol>>, ElfError> {
    use object::{ObjectSection, ObjectSymbolTable, RelocationTarget};
    let data = read_elf(path)?;
    let file = object::File::parse(&*data)
        .map_err(|e| ElfError::NotElf(format!("{} is not an ELF object ebq can read: {e}", path.display())))?;
    let one = |name: &str| {
        let s = file
            .dynamic_symbols()
            .chain(file.symbols())
            .find(|s| s.kind() == SymbolKind::Data && !s.is_undefined() && s.name() == Ok(name))?;
        let section = s.section_index().and_then(|i| file.section_by_index(i).ok());
        let bytes = section
            .and_then(|sec| sec.data_range(s.address(), s.size()).ok().flatten())
            .filter(|b| !b.is_empty())
            .map(<[u8]>::to_vec);
        let dynsym = file.dynamic_symbol_table();
        let got_slot = file.dynamic_relocations().and_then(|mut relocations| {
            relocations.find_map(|(at, r)| match r.target() {
                RelocationTarget::Symbol(i) => {
                    (dynsym.as_ref()?.symbol_by_index(i).ok()?.name() == Ok(name)).then_some(at)
                }
                _ => None,
            })
        });
        Some(DataSymbol { address: s.address(), bytes, got_slot })
    };
    Ok(names.iter().map(|n| one(n)).collect())
}

/// Finds function `symbol` in `path` (dynamic symbols first, then `.symtab`)
/// and computes its uprobe file offset.
pub fn find_symbol(path: &Path, symbol: &str) -> Result<ElfSymbol, ElfError> {
    find_symbols(path, &[symbol]).remove(0)
}

/// [`find_symbol`] for each of `symbols`, reading and parsing `path` once.
pub fn find_symbols(path: &Path, symbols: &[&str]) -> Vec<Result<ElfSymbol, ElfError>> {
    let data = match read_elf(path) {
        Ok(d) => d,
        Err(e) => return symbols.iter().map(|_| Err(e.clone())).collect(),
    };
    let file = match object::File::parse(&*data) {
        Ok(f) if f.is_64() => f,
        Ok(_) => {
            let why = format!("{} is a 32-bit ELF object; ebq maps the x86-64 calling convention only", path.display());
            return symbols.iter().map(|_| Err(ElfError::NotElf(why.clone()))).collect();
        }
        Err(e) => {
            let why = format!("{} is not an ELF object ebq can read: {e}", path.display());
            return symbols.iter().map(|_| Err(ElfError::NotElf(why.clone()))).collect();
        }
    };
    let defined_functions = || file.dynamic_symbols().chain(file.symbols()).filter(is_defined_function);
    let mut found: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for s in defined_functions() {
        if let Ok(name) = s.name() {
            if symbols.contains(&name) {
                found.entry(name).or_insert(s.address());
            }
        }
    }
    let one = |symbol: &str| {
        let Some(&address) = found.get(symbol) else {
            if file.dynamic_symbols().any(|s| s.is_undefined() && s.name() == Ok(symbol)) {
                return Err(ElfError::Imported);
            }
            let suggestions = closest(symbol, defined_functions().filter_map(|s| s.name().ok()));
            return Err(ElfError::NoSymbol { suggestions });
        };
        let segment = file
            .segments()
            .find(|s| s.address() <= address && address < s.address() + s.size())
            .ok_or_else(|| ElfError::NotElf(format!("{symbol} at {address:#x} lies in no loadable segment")))?;
        let (file_start, _) = segment.file_range();
        Ok(ElfSymbol { path: path.to_path_buf(), address, offset: address - segment.address() + file_start })
    };
    symbols.iter().map(|s| one(s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libc_by_bare_name_and_its_pread64() {
        let libc = resolve_binary("libc").expect("libc in the standard directories");
        assert_eq!(resolve_binary("libc.so.6").unwrap(), libc);
        assert_eq!(resolve_binary("c").unwrap(), libc);
        let s = find_symbol(&libc, "pread64").unwrap();
        // In a shared object the first segment starts at 0, so offset and address agree
        // up to the segment's alignment slack.
        assert!(s.offset > 0 && s.offset <= s.address);
        match find_symbol(&libc, "pread6") {
            Err(ElfError::NoSymbol { suggestions }) => assert!(suggestions.contains(&"pread64".to_string())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_files() {
        assert!(matches!(resolve_binary("/no/such/lib.so"), Err(ElfError::NoFile { .. })));
        assert!(matches!(resolve_binary("libnosuchlibrary"), Err(ElfError::NoFile { .. })));
        for not_elf in ["/etc/hostname", "/proc/kcore", "/dev/zero"] {
            assert!(matches!(find_symbol(Path::new(not_elf), "x"), Err(ElfError::NotElf(_))), "{not_elf}");
        }
    }
}
