//! `vmlinux.h` for CO-RE programs, cached as a clang precompiled header.
//!
//! Programs with file columns include `vmlinux.h`, every type of the running
//! kernel, generated from its BTF with `bpftool btf dump … format c`. Parsing
//! the 2.8 MB header costs ~300 ms per query, so it is compiled once into a
//! precompiled header and reused. Both files live in
//! `<cache>/vmlinux-<key>/`, where the key hashes the kernel's identity (its
//! BTF file's size, `uname -r` and `uname -v`) and the clang binary (a PCH only
//! loads into the clang that wrote it): a new kernel or clang gets a new
//! directory, so a stale header is never used.
//!
//! A PCH clang refuses (damaged, or removed meanwhile) is discarded and rebuilt
//! once by `compile`.
//!
//! Two ebq processes may build the same cache at once: each writes a private
//! temporary file and publishes it with `link(2)`, which never replaces an
//! existing file, so readers only ever see complete files and a PCH never
//! sees its header change under it.

use ebq_front::error::{Error, Result};
use ebq_front::host::btf::kernel_btf_path;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variable overriding the cache directory.
pub const CACHE_ENV: &str = "EBQ_CACHE_DIR";

/// Where cached headers live: `$EBQ_CACHE_DIR`, `$XDG_CACHE_HOME/ebq`,
/// `$HOME/.cache/ebq`, else `$TMPDIR/ebq-cache`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(CACHE_ENV) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("ebq");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".cache").join("ebq");
    }
    std::env::temp_dir().join("ebq-cache")
}

/// A ready `vmlinux.h` and its precompiled header.
#[derive(Debug, Clone)]
pub struct Vmlinux {
    /// Directory holding `vmlinux.h` (passed to clang with `-I`).
    pub include_dir: PathBuf,
    /// The precompiled header (passed with `-include-pch`).
    pub pch: PathBuf,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

/// The cached `vmlinux.h` and PCH for this kernel and `clang`, built if missing.
/// `flags` are the target flags queries are compiled with (a PCH must match them).
pub fn vmlinux(clang: &Path, flags: &[&str]) -> Result<Vmlinux> {
    let (btf, dir) = cache_entry(clang, flags)?;
    let header = dir.join("vmlinux.h");
    let pch = dir.join("vmlinux.h.pch");
    if header.exists() && pch.exists() {
        return Ok(Vmlinux { include_dir: dir, pch });
    }
    build(&btf, clang, flags, &dir, &header, &pch)?;
    Ok(Vmlinux { include_dir: dir, pch })
}

/// True when clang's errors say the PCH itself is unusable (damaged, removed
/// meanwhile, or written by another clang build), so rebuilding it helps.
pub fn is_pch_problem(stderr: &str) -> bool {
    stderr.contains("PCH file") || stderr.contains("precompiled header") || stderr.contains("not a PCH file")
}

/// Removes this kernel's cached header and PCH, so the next [`vmlinux`] rebuilds them.
pub fn discard(clang: &Path, flags: &[&str]) -> Result<()> {
    let (_, dir) = cache_entry(clang, flags)?;
    for name in ["vmlinux.h.pch", "vmlinux.h"] {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::Io { what: format!("remove {}", dir.join(name).display()), source: e })
            }
            _ => {}
        }
    }
    Ok(())
}

/// The kernel BTF file and the cache directory for it and `clang`.
fn cache_entry(clang: &Path, flags: &[&str]) -> Result<(PathBuf, PathBuf)> {
    let btf = kernel_btf_path();
    let btf_len = std::fs::metadata(&btf)
        .map_err(|e| Error::Environment {
            problem: format!("the kernel's BTF ({}) cannot be read: {e}; file columns need it", btf.display()),
            help: "use a kernel built with CONFIG_DEBUG_INFO_BTF, or point EBQ_KERNEL_BTF at its BTF".into(),
        })?
        .len();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (btf_len, uname(), flags).hash(&mut h);
    if let Ok(m) = std::fs::metadata(clang) {
        (clang, m.len(), m.modified().ok()).hash(&mut h);
    }
    let dir = cache_dir().join(format!("vmlinux-{:016x}", h.finish()));
    Ok((btf, dir))
}

/// Generates the header and compiles the PCH, whichever is missing.
fn build(btf: &Path, clang: &Path, flags: &[&str], dir: &Path, header: &Path, pch: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    if !header.exists() {
        let text = dump_btf(btf)?;
        publish(header, |tmp| std::fs::write(tmp, &text).map_err(io(format!("write {}", tmp.display()))))?;
    }
    if !pch.exists() {
        publish(pch, |tmp| {
            let out = Command::new(clang)
                .args(flags)
                .args(["-x", "c-header"])
                .arg(header)
                .arg("-o")
                .arg(tmp)
                .output()
                .map_err(io(format!("run {}", clang.display())))?;
            if !out.status.success() {
                return Err(Error::Compile {
                    stderr: format!("precompiling {}: {}", header.display(), String::from_utf8_lossy(&out.stderr)),
                });
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Writes `target` through a private temporary file and `link(2)`; if another
/// process published it first, its file is kept.
fn publish(target: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let tmp = target.with_extension(format!("tmp-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let result = write(&tmp).and_then(|()| match std::fs::hard_link(&tmp, target) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::Io { what: format!("publish {}", target.display()), source: e }),
    });
    let _ = std::fs::remove_file(&tmp);
    result
}

/// `bpftool btf dump file BTF format c` (bpftool from `$EBQ_BPFTOOL` or PATH).
fn dump_btf(btf: &Path) -> Result<Vec<u8>> {
    let bpftool = std::env::var_os("EBQ_BPFTOOL").map_or_else(|| PathBuf::from("bpftool"), PathBuf::from);
    let out =
        Command::new(&bpftool).args(["btf", "dump", "file"]).arg(btf).args(["format", "c"]).output().map_err(|e| {
            Error::Environment {
                problem: format!("cannot run {} to generate vmlinux.h for file columns: {e}", bpftool.display()),
                help: "install bpftool (`apt-get install bpftool`), or point EBQ_BPFTOOL at it".into(),
            }
        })?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(Error::Environment {
            problem: format!(
                "`bpftool btf dump file {} format c` failed: {}",
                btf.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            help: "file columns need the kernel's BTF (CONFIG_DEBUG_INFO_BTF)".into(),
        });
    }
    Ok(out.stdout)
}

/// Kernel release and version: with the BTF size, the kernel build's identity.
pub(super) fn uname() -> (String, String) {
    // SAFETY: utsname is plain data that uname fills.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: u is a valid utsname.
    if unsafe { libc::uname(&mut u) } != 0 {
        return Default::default();
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (field(&u.release), field(&u.version))
}
