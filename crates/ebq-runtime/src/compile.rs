//! clang: generated C → BPF object file.

use super::env::{check_headers, find_clang};
use ebq_front::error::{Error, Result};
use std::path::PathBuf;
use std::process::Command;

/// A new private directory under `$TMPDIR` (the caller removes it).
pub fn scratch_dir() -> Result<PathBuf> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!("ebq-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { what: format!("create {}", dir.display()), source })?;
    Ok(dir)
}

/// A private scratch directory, removed on drop.
pub struct WorkDir(pub PathBuf);

impl WorkDir {
    /// Creates `$TMPDIR/ebq-<pid>-<n>`.
    pub fn new() -> Result<WorkDir> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir =
            std::env::temp_dir().join(format!("ebq-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        std::fs::create_dir_all(&dir)
            .map_err(|source| Error::Io { what: format!("create {}", dir.display()), source })?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Include directory for `asm/types.h` on multiarch Debian.
fn arch_include() -> Option<String> {
    let arch = std::env::consts::ARCH;
    let triple = match arch {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        _ => return None,
    };
    let dir = format!("/usr/include/{triple}");
    std::path::Path::new(&dir).exists().then_some(dir)
}

/// clang flags that shape the generated code; a precompiled header must be
/// built with the same ones.
const TARGET_FLAGS: &[&str] = &["-O2", "-g", "-target", "bpf", "-mcpu=v3"];

/// How generated C asks for the kernel's types (file columns): such sources
/// compile against the cached `vmlinux.h` precompiled header.
const VMLINUX_INCLUDE: &str = "#include \"vmlinux.h\"";

/// Compiles `source` to a BPF object and returns its bytes, from the object
/// cache when this source was compiled before with the same toolchain and
/// kernel (`object_cache`).
pub fn compile(source: &str) -> Result<Vec<u8>> {
    let clang = find_clang()?;
    super::object_cache::get_or_compile(source, &toolchain_identity(&clang), || compile_uncached(source))
}

/// What besides the source decides the object's bytes: clang and the headers
/// it reads (path, size, mtime: a stat each, where `clang --version` would
/// cost a process), the kernel (CO-RE sources include its `vmlinux.h`) and
/// the flags.
fn toolchain_identity(clang: &std::path::Path) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let mut id = format!("{TARGET_FLAGS:?} {:?} {:?}\n", arch_include(), super::btf::uname());
    let btf = ebq_front::host::btf::kernel_btf_path();
    for file in [
        clang,
        std::path::Path::new("/usr/include/bpf/bpf_helpers.h"),
        std::path::Path::new("/usr/include/linux/bpf.h"),
        &btf,
    ] {
        let m = std::fs::metadata(file).ok();
        id += &format!("{} {:?}\n", file.display(), m.map(|m| (m.len(), m.mtime(), m.mtime_nsec(), m.ino())));
    }
    id.into_bytes()
}

fn compile_uncached(source: &str) -> Result<Vec<u8>> {
    match compile_once(source) {
        // A cached vmlinux PCH clang cannot use: rebuild it, once.
        Err(Error::Compile { stderr }) if source.contains(VMLINUX_INCLUDE) && super::btf::is_pch_problem(&stderr) => {
            super::btf::discard(&find_clang()?, TARGET_FLAGS)?;
            compile_once(source)
        }
        other => other,
    }
}

fn compile_once(source: &str) -> Result<Vec<u8>> {
    check_headers()?;
    let clang = find_clang()?;
    let dir = WorkDir::new()?;
    let c = dir.0.join("query.bpf.c");
    let o = dir.0.join("query.bpf.o");
    let io = |what: String| move |source| Error::Io { what, source };
    std::fs::write(&c, source).map_err(io(format!("write {}", c.display())))?;
    let mut cmd = Command::new(&clang);
    // Expressions may nest up to bind::MAX_EXPR_DEPTH levels, a few brackets each.
    // A query may say something always true or false (`comm <> '' OR '' = comm`):
    // that is the user's SQL, not a bug in the C, so clang's tautology warnings stay off.
    cmd.args(TARGET_FLAGS).args([
        "-Wall",
        "-Werror",
        "-Wno-unused-function",
        "-Wno-tautological-compare",
        "-Wno-tautological-overlap-compare",
        "-fbracket-depth=4096",
    ]);
    if source.contains(VMLINUX_INCLUDE) {
        let v = super::btf::vmlinux(&clang, TARGET_FLAGS)?;
        cmd.arg("-I").arg(&v.include_dir).arg("-include-pch").arg(&v.pch);
    } else if let Some(inc) = arch_include() {
        cmd.arg(format!("-I{inc}"));
    }
    cmd.arg("-c").arg(&c).arg("-o").arg(&o);
    let out = cmd.output().map_err(io(format!("run {}", clang.display())))?;
    if !out.status.success() {
        return Err(Error::Compile { stderr: String::from_utf8_lossy(&out.stderr).into_owned() });
    }
    std::fs::read(&o).map_err(io(format!("read {}", o.display())))
}
