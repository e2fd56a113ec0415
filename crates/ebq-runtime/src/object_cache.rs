//! Compiled BPF objects, cached by content so a query seen before starts
//! without clang (clang is ~45 ms of a ~60 ms start; `bench/RESULTS.md`,
//! "Startup and teardown").
//!
//! An entry's name is the XXH3-128 of everything that decides the object's
//! bytes: the generated C, the clang binary (path, size, mtime), the libbpf
//! headers the C includes, the kernel (BTF size, `uname -r`, `uname -v`:
//! CO-RE C includes this kernel's `vmlinux.h`), ebq's version and the compile
//! flags. The entry holds the XXH3-128 of the object, then the object; a
//! read whose bytes do not match is a miss (the entry is rebuilt), so a torn
//! or damaged file is never loaded. Checksums catch damage, not tampering:
//! that is the directory's job, so ebq refuses a cache directory that is a
//! symlink, not owned by root (this process's user) or writable by group or
//! others, and opens entries with `O_NOFOLLOW`.
//!
//! Entries are published by writing a private temporary file and renaming it
//! over the name: concurrent ebq processes see either no entry or a complete
//! one. Beyond [`MAX_BYTES`] the least recently used entries are removed (a
//! hit refreshes its entry's mtime).

use ebq_front::error::{Error, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use twox_hash::XxHash3_128;

/// Total size the cache is trimmed to after each store.
pub const MAX_BYTES: u64 = 64 << 20;

static DISABLED: AtomicBool = AtomicBool::new(false);
static CLANG_RUNS: AtomicU64 = AtomicU64::new(0);
static HITS: AtomicU64 = AtomicU64::new(0);

/// Turns the cache off for this process (`--no-cache`): every query is compiled.
pub fn disable() {
    DISABLED.store(true, Ordering::SeqCst);
}

/// How this process got its objects so far: (from the cache, compiled by clang).
pub fn counts() -> (u64, u64) {
    (HITS.load(Ordering::SeqCst), CLANG_RUNS.load(Ordering::SeqCst))
}

/// The object for `source`: from the cache when an intact entry exists for
/// this key, else `compile(source)`, stored for next time. `identity` is
/// everything besides the source that shapes the object (see the module doc).
pub(super) fn get_or_compile(
    source: &str,
    identity: &[u8],
    compile: impl FnOnce() -> Result<Vec<u8>>,
) -> Result<Vec<u8>> {
    if DISABLED.load(Ordering::SeqCst) {
        CLANG_RUNS.fetch_add(1, Ordering::SeqCst);
        return compile();
    }
    let dir = objects_dir()?;
    let mut h = XxHash3_128::new();
    h.write(env!("CARGO_PKG_VERSION").as_bytes());
    h.write(&(identity.len() as u64).to_le_bytes());
    h.write(identity);
    h.write(source.as_bytes());
    let entry = dir.join(format!("{:032x}.o", h.finish_128()));
    if let Some(object) = read_entry(&entry) {
        HITS.fetch_add(1, Ordering::SeqCst);
        return Ok(object);
    }
    CLANG_RUNS.fetch_add(1, Ordering::SeqCst);
    let object = compile()?;
    // A cache that cannot be written costs the next run a compile, nothing more.
    if store(&entry, &object).is_ok() {
        trim(&dir, MAX_BYTES);
    }
    Ok(object)
}

/// `<cache>/objects`, created 0700, after checking it and the cache directory.
fn objects_dir() -> Result<PathBuf> {
    objects_dir_in(&super::btf::cache_dir())
}

/// `root/objects`, with every missing directory up to `root` created 0700 (on
/// a fresh machine even `~/.cache` may not exist yet, and a first query must
/// not fail for it). `root` is checked before anything is made inside it.
fn objects_dir_in(root: &Path) -> Result<PathBuf> {
    let create = |d: &Path, recursive: bool| match std::fs::DirBuilder::new().recursive(recursive).mode(0o700).create(d)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(Error::Io { what: format!("create the object cache {}", d.display()), source: e })
        }
        _ => check_private(d),
    };
    let dir = root.join("objects");
    create(root, true)?;
    create(&dir, false)?;
    Ok(dir)
}

/// Refuses a directory others could plant objects in: a symlink, not ours,
/// or group/other-writable.
fn check_private(dir: &Path) -> Result<()> {
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| Error::Io { what: format!("inspect the object cache {}", dir.display()), source: e })?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let problem = if m.file_type().is_symlink() {
        "is a symlink".to_string()
    } else if !m.is_dir() {
        "is not a directory".to_string()
    } else if m.uid() != me {
        format!("is owned by uid {}, not by this user (uid {me})", m.uid())
    } else if m.mode() & 0o022 != 0 {
        format!("is writable by group or others (mode {:o})", m.mode() & 0o7777)
    } else {
        return Ok(());
    };
    Err(Error::Environment {
        problem: format!(
            "the object cache {} {problem}: ebq loads compiled programs from it into the kernel, so it must be private",
            dir.display()
        ),
        help: format!(
            "remove it (ebq recreates it with mode 0700), point {} at a private directory, or run with --no-cache",
            super::btf::CACHE_ENV
        ),
    })
}

/// The object in `entry` when it is a regular file of ours whose checksum
/// matches; a damaged entry is removed.
fn read_entry(entry: &Path) -> Option<Vec<u8>> {
    let mut f = File::options().read(true).custom_flags(libc::O_NOFOLLOW).open(entry).ok()?;
    let m = f.metadata().ok()?;
    // SAFETY: geteuid has no preconditions.
    if !m.is_file() || m.uid() != unsafe { libc::geteuid() } {
        return None;
    }
    let mut bytes = Vec::with_capacity(m.len() as usize);
    f.read_to_end(&mut bytes).ok()?;
    let (sum, object) = bytes.split_at_checked(16)?;
    if sum != XxHash3_128::oneshot(object).to_le_bytes() {
        let _ = std::fs::remove_file(entry);
        return None;
    }
    let _ = f.set_modified(std::time::SystemTime::now());
    Some(object.to_vec())
}

/// Publishes `object` at `entry`: checksum and bytes into a private
/// temporary file, then `rename(2)`, so readers see all of it or nothing.
fn store(entry: &Path, object: &[u8]) -> std::io::Result<()> {
    let tmp = entry.with_extension(format!("tmp-{}", std::process::id()));
    let write = || {
        let mut f =
            File::options().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(&tmp)?;
        f.write_all(&XxHash3_128::oneshot(object).to_le_bytes())?;
        f.write_all(object)?;
        std::fs::rename(&tmp, entry)
    };
    let r = write();
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Removes the least recently used entries until the cache holds at most `max` bytes.
fn trim(dir: &Path, max: u64) {
    let Ok(list) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<(std::time::SystemTime, u64, PathBuf)> = list
        .flatten()
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path())).filter(|_| m.is_file())
        })
        .collect();
    let mut total: u64 = entries.iter().map(|e| e.1).sum();
    entries.sort();
    for (_, len, path) in entries {
        if total <= max {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ebq-cache-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }

    #[test]
    fn a_stored_entry_reads_back_and_a_damaged_one_is_a_miss_and_removed() {
        let d = fresh("damage");
        let e = d.join("k.o");
        store(&e, b"\x7fELF object").unwrap();
        assert_eq!(read_entry(&e).as_deref(), Some(&b"\x7fELF object"[..]));
        let mut bytes = std::fs::read(&e).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&e, bytes).unwrap();
        assert_eq!(read_entry(&e), None);
        assert!(!e.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn unsafe_directories_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = fresh("perm");
        assert!(check_private(&d).is_ok());
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_private(&d).unwrap_err().to_string();
        assert!(e.contains("writable by group or others (mode 777)"), "{e}");
        let link = d.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(check_private(&link).unwrap_err().to_string().contains("is a symlink"));
        std::fs::remove_file(&link).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_cache_under_missing_parents_is_created_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = fresh("nested");
        // As on a fresh machine: no `~/.cache` yet.
        let root = d.join("home/.cache/ebq");
        let objects = objects_dir_in(&root).unwrap();
        assert_eq!(objects, root.join("objects"));
        for p in [&root, &objects] {
            assert_eq!(std::fs::metadata(p).unwrap().permissions().mode() & 0o777, 0o700, "{}", p.display());
        }
        // Again, now that it exists.
        assert_eq!(objects_dir_in(&root).unwrap(), objects);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn trim_removes_the_least_recently_used_first() {
        let d = fresh("trim");
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let p = d.join(name);
            std::fs::write(&p, [0u8; 100]).unwrap();
            let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000 + i as u64);
            File::options().write(true).open(&p).unwrap().set_modified(t).unwrap();
        }
        trim(&d, 200);
        let mut left: Vec<String> =
            std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["mid", "new"]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
