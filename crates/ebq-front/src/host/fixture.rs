//! [`FixtureKernel`]: a kernel and host described by checked-in files, so
//! bind and plan run in tests without tracefs, BTF, kallsyms, headers or
//! binaries.
//!
//! A fixture directory holds:
//!
//! ```text
//! formats/events/CAT/NAME/format   tracefs format files, copied from a kernel
//! kallsyms                         /proc/kallsyms lines (kprobe targets)
//! btf_functions                    NAME BTF_ID ARG_SLOTS value|void, one function a line
//! btf/kernel.btf                   raw BTF: tracepoint arguments and kernel structs (btf/regenerate.sh)
//! unistd_64.h                      #define __NR_NAME NR lines (x86-64's numbers)
//! unistd_arm64.h                   the same for arm64 ([`FixtureKernel::checked_in_arm64`])
//! uprobes                          binaries and their functions (format below)
//! ```
//!
//! `uprobes` declares what ELF files would say, one fact a line:
//!
//! ```text
//! libdir DIR                             searched for bare library names (error messages list them)
//! elf PATH [NAME ...]                    a 64-bit ELF file, and the names that find it: bare
//!                                        library names (libc, c), paths that link to it (/bin/bash)
//! file PATH                              a file that is not ELF
//! function PATH SYMBOL ADDRESS OFFSET    a function PATH defines (hex address and file offset)
//! import PATH SYMBOL                     a function PATH calls from a shared library
//! usdt PATH PROVIDER NAME OFFSET SEMAPHORE [ARG ...]
//!                                        a USDT probe site of PATH (hex file offsets of the
//!                                        probe and its semaphore, 0 for none; argument specs)
//! ```
//!
//! Blank lines and lines starting with `#` are skipped in `btf_functions` and `uprobes`.

use super::{ElfError, ElfSymbol, FormatFile, KernelFunction, KernelInfo, SyscallTable, Tracefs, TracefsError};
use crate::btf::Btf;
use crate::suggest::closest;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A kernel and host read from a fixture directory (see the module docs).
#[derive(Debug, Clone)]
pub struct FixtureKernel {
    tracefs: Tracefs,
    btf_functions: HashMap<String, KernelFunction>,
    btf: Arc<Btf>,
    kallsyms: HashSet<String>,
    syscalls: SyscallTable,
    binaries: Binaries,
    /// `x86_64`, unless made for another instruction set.
    arch: String,
}

/// The `uprobes` file.
#[derive(Debug, Clone, Default)]
struct Binaries {
    library_dirs: Vec<String>,
    files: Vec<Binary>,
}

/// One declared file.
#[derive(Debug, Clone)]
struct Binary {
    path: String,
    /// Bare library names that resolve to it.
    names: Vec<String>,
    is_elf: bool,
    /// (symbol, address, file offset) of each defined function.
    functions: Vec<(String, u64, u64)>,
    imports: Vec<String>,
    usdt: Vec<super::usdt::UsdtSite>,
}

impl FixtureKernel {
    /// Reads the fixture directory `dir`.
    pub fn load(dir: impl AsRef<Path>) -> io::Result<FixtureKernel> {
        let dir = dir.as_ref();
        let read = |name: &str| std::fs::read_to_string(dir.join(name));
        let at = |name: &str| dir.join(name).display().to_string();
        Ok(FixtureKernel {
            tracefs: Tracefs::at(dir.join("formats")),
            btf_functions: parse_btf_functions(&read("btf_functions")?).map_err(|e| bad(&at("btf_functions"), e))?,
            btf: Arc::new(
                Btf::parse(&std::fs::read(dir.join("btf/kernel.btf"))?).map_err(|e| {
                    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", at("btf/kernel.btf")))
                })?,
            ),
            kallsyms: super::kallsyms::text_symbol_names(&read("kallsyms")?),
            syscalls: SyscallTable::parse(&read("unistd_64.h")?),
            binaries: parse_binaries(&read("uprobes")?).map_err(|e| bad(&at("uprobes"), e))?,
            arch: super::X86_64.into(),
        })
    }

    /// The fixture checked in with this crate (`crates/ebq-front/tests/fixtures`),
    /// read once. For tests: panics when those files are missing or malformed.
    pub fn checked_in() -> Arc<FixtureKernel> {
        static FIXTURE: OnceLock<Arc<FixtureKernel>> = OnceLock::new();
        FIXTURE
            .get_or_init(|| {
                Arc::new(FixtureKernel::load(CHECKED_IN).unwrap_or_else(|e| panic!("fixture kernel {CHECKED_IN}: {e}")))
            })
            .clone()
    }

    /// [`FixtureKernel::checked_in`] as an arm64 machine: the same kernel's
    /// events and BTF, arm64's system call numbers (`unistd_arm64.h`). What
    /// bind and plan do per instruction set is tested with it.
    pub fn checked_in_arm64() -> Arc<FixtureKernel> {
        static FIXTURE: OnceLock<Arc<FixtureKernel>> = OnceLock::new();
        FIXTURE
            .get_or_init(|| {
                let path = format!("{CHECKED_IN}/unistd_arm64.h");
                let table = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
                let x86 = FixtureKernel::checked_in();
                Arc::new(FixtureKernel {
                    syscalls: SyscallTable::parse(&table),
                    arch: "aarch64".into(),
                    ..(*x86).clone()
                })
            })
            .clone()
    }

    /// The checked-in fixture as a 6.2+ kernel: its BTF is
    /// `btf/kernel_typed.btf`, which adds the kfuncs typed file loads, late
    /// names and `pages_mapped` need (`btf/kernel_typed.c`). Read once; for
    /// tests, like [`FixtureKernel::checked_in`].
    pub fn typed() -> Arc<FixtureKernel> {
        static TYPED: OnceLock<Arc<FixtureKernel>> = OnceLock::new();
        TYPED
            .get_or_init(|| {
                let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/btf/kernel_typed.btf");
                let btf = std::fs::read(path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| Btf::parse(&b).map_err(|e| e.to_string()));
                let mut k = (*FixtureKernel::checked_in()).clone();
                k.btf = Arc::new(btf.unwrap_or_else(|e| panic!("fixture kernel {path}: {e}")));
                Arc::new(k)
            })
            .clone()
    }

    fn binary(&self, path: &str) -> Option<&Binary> {
        self.binaries.files.iter().find(|b| b.path == path)
    }
}

/// The fixture directory checked in with this crate.
const CHECKED_IN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn bad(file: &str, (line, why): (usize, String)) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{file}:{line}: {why}"))
}

/// Lines that say something: (1-based line number, words).
fn facts(text: &str) -> impl Iterator<Item = (usize, Vec<&str>)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.split_whitespace().collect::<Vec<_>>()))
        .filter(|(_, w)| w.first().is_some_and(|w| !w.starts_with('#')))
}

fn number(word: &str, line: usize) -> Result<u64, (usize, String)> {
    let parsed = match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => word.parse(),
    };
    parsed.map_err(|_| (line, format!("`{word}` is not a number")))
}

fn parse_btf_functions(text: &str) -> Result<HashMap<String, KernelFunction>, (usize, String)> {
    let mut out = HashMap::new();
    for (line, w) in facts(text) {
        let [name, id, slots, returns] = w[..] else {
            return Err((line, "expected NAME BTF_ID ARG_SLOTS value|void".into()));
        };
        let returns_value = match returns {
            "value" => true,
            "void" => false,
            other => return Err((line, format!("`{other}` is neither value nor void"))),
        };
        let (btf_id, arg_slots) = (number(id, line)? as u32, number(slots, line)? as u32);
        out.insert(name.to_string(), KernelFunction { arg_slots, returns_value, btf_id });
    }
    Ok(out)
}

fn parse_binaries(text: &str) -> Result<Binaries, (usize, String)> {
    let mut out = Binaries::default();
    for (line, w) in facts(text) {
        let declared = |out: &mut Binaries, path: &str| {
            out.files.iter().position(|b| b.path == path).ok_or((line, format!("`{path}` is not declared above")))
        };
        match w[..] {
            ["libdir", dir] => out.library_dirs.push(dir.into()),
            ["elf", path, ref names @ ..] | ["file", path, ref names @ ..] => out.files.push(Binary {
                path: path.into(),
                names: names.iter().map(|n| n.to_string()).collect(),
                is_elf: w[0] == "elf",
                functions: vec![],
                imports: vec![],
                usdt: vec![],
            }),
            ["function", path, symbol, address, offset] => {
                let (address, offset) = (number(address, line)?, number(offset, line)?);
                let i = declared(&mut out, path)?;
                out.files[i].functions.push((symbol.into(), address, offset));
            }
            ["import", path, symbol] => {
                let i = declared(&mut out, path)?;
                out.files[i].imports.push(symbol.into());
            }
            ["usdt", path, provider, name, offset, semaphore, ref args @ ..] => {
                let (offset, semaphore) = (number(offset, line)?, number(semaphore, line)?);
                let i = declared(&mut out, path)?;
                out.files[i].usdt.push(super::usdt::UsdtSite {
                    provider: provider.into(),
                    name: name.into(),
                    offset,
                    semaphore,
                    args: args.join(" "),
                });
            }
            _ => return Err((line, "expected libdir, elf, file, function, import or usdt".into())),
        }
    }
    Ok(out)
}

impl KernelInfo for FixtureKernel {
    fn tracepoints(&self) -> Result<Vec<(String, String)>, TracefsError> {
        self.tracefs.events()
    }

    fn tracepoint_format(&self, category: &str, name: &str) -> Result<Option<FormatFile>, TracefsError> {
        self.tracefs.format(category, name)
    }

    fn btf_functions(&self) -> Option<&HashMap<String, KernelFunction>> {
        Some(&self.btf_functions)
    }

    fn btf(&self) -> Option<&Btf> {
        Some(&self.btf)
    }

    fn btf_problem(&self) -> Option<String> {
        None
    }

    fn kallsyms_has_function(&self, function: &str) -> Option<bool> {
        Some(self.kallsyms.contains(function))
    }

    fn resolve_binary(&self, name: &str) -> Result<PathBuf, ElfError> {
        // A path must be declared (as the file or a symlink to it); a bare name must find an ELF file.
        let found = self
            .binaries
            .files
            .iter()
            .find(|b| (b.path == name || b.names.iter().any(|n| n == name)) && (b.is_elf || name.contains('/')));
        match found {
            Some(b) => Ok(PathBuf::from(&b.path)),
            None if name.contains('/') => Err(ElfError::NoFile { looked: vec![name.to_string()] }),
            None => Err(ElfError::NoFile { looked: self.binaries.library_dirs.clone() }),
        }
    }

    fn find_symbol(&self, path: &Path, symbol: &str) -> Result<ElfSymbol, ElfError> {
        let Some(b) = self.binary(&path.display().to_string()).filter(|b| b.is_elf) else {
            return Err(ElfError::NotElf(format!("{} is not an ELF object ebq can read", path.display())));
        };
        if let Some((_, address, offset)) = b.functions.iter().find(|(s, _, _)| s == symbol) {
            return Ok(ElfSymbol { path: path.to_path_buf(), address: *address, offset: *offset });
        }
        if b.imports.iter().any(|s| s == symbol) {
            return Err(ElfError::Imported);
        }
        Err(ElfError::NoSymbol { suggestions: closest(symbol, b.functions.iter().map(|(s, _, _)| s.as_str())) })
    }

    fn usdt_sites(&self, path: &Path) -> Result<Vec<super::usdt::UsdtSite>, ElfError> {
        match self.binary(&path.display().to_string()).filter(|b| b.is_elf) {
            Some(b) => Ok(b.usdt.clone()),
            None => Err(ElfError::NotElf(format!("{} is not an ELF object ebq can read", path.display()))),
        }
    }

    fn syscalls(&self) -> &SyscallTable {
        &self.syscalls
    }

    fn arch(&self) -> &str {
        &self.arch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_are_named() {
        assert_eq!(parse_btf_functions("# c\nvfs_read 1 4 value\nx 1 2 maybe\n").unwrap_err().0, 3);
        let err = parse_binaries("libdir /lib\nfunction /bin/x f 0x10 0x10\n").unwrap_err();
        assert_eq!(err, (2, "`/bin/x` is not declared above".to_string()));
    }

    #[test]
    fn the_checked_in_fixture_answers_like_a_host() {
        let k = FixtureKernel::checked_in();
        let libc = k.resolve_binary("libc").unwrap();
        assert_eq!(k.resolve_binary("c").unwrap(), libc);
        assert!(k.find_symbol(&libc, "pread64").unwrap().offset > 0);
        assert!(matches!(k.resolve_binary("libnosuch"), Err(ElfError::NoFile { looked }) if !looked.is_empty()));
        assert_eq!(k.kallsyms_has_function("vfs_read"), Some(true));
        assert_eq!(k.btf_functions().unwrap()["vfs_read"].arg_slots, 4);
        assert_eq!(k.syscalls().nr("pread64"), Some(17));
        assert_eq!(k.arch(), "x86_64");
        let arm64 = FixtureKernel::checked_in_arm64();
        assert_eq!((arm64.arch(), arm64.syscalls().nr("pread64")), ("aarch64", Some(67)));
        assert_eq!(arm64.syscalls().nr("open"), None, "arm64 has openat only");
    }
}
