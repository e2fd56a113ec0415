//! Pinned maps for external samplers (`--pin DIR`): the query's group map and
//! its accounting pinned on bpffs, plus a C header describing them.
//!
//! bpffs holds only BPF objects (creating a regular file there fails with
//! EPERM), so the header cannot sit inside the pin directory: it goes to
//! [`default_header_path`] (under /run/ebq/pins) unless a path is given.
//! The [`Pins`] guard removes everything when the query is dropped (normal
//! exit, Ctrl-C/SIGTERM handled by the caller, error paths, panics) unless
//! the pins are kept.

use ebq_front::error::{Error, Result};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Where ebq mounts bpffs when it is missing and the pin is below it.
pub const BPFFS: &str = "/sys/fs/bpf";
/// `statfs` magic of bpffs (linux/magic.h `BPF_FS_MAGIC`).
const BPF_FS_MAGIC: i64 = 0xcafe4a11;

/// What to pin and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinOptions {
    /// The pin directory on bpffs, e.g. `/sys/fs/bpf/ebq/reads`; it must not
    /// exist yet (its parents are created).
    pub dir: PathBuf,
    /// Where to write the C header; `None` for [`default_header_path`].
    pub header: Option<PathBuf>,
    /// Leave the pins and the header behind when the query ends (the final
    /// window's groups stay in the map for readers).
    pub keep: bool,
}

impl PinOptions {
    /// The checks that need no bpffs (absolute, not taken), so a front end can
    /// refuse a bad pin before compiling and loading the query.
    pub fn check(&self) -> Result<()> {
        let shown = self.dir.display();
        if !self.dir.is_absolute() {
            return Err(io(format!("pin at {shown}"), std::io::Error::other("the pin path must be absolute")));
        }
        if std::fs::symlink_metadata(&self.dir).is_ok() {
            return Err(io(
                format!("pin at {shown}"),
                std::io::Error::new(
                    ErrorKind::AlreadyExists,
                    format!(
                        "the path exists (left by an earlier --keep-pins?); remove it with `rm -r {shown}` or pick another"
                    ),
                ),
            ));
        }
        Ok(())
    }

    /// The header path these options write.
    pub fn header_path(&self) -> PathBuf {
        self.header.clone().unwrap_or_else(|| default_header_path(&self.dir))
    }
}

/// `/run/ebq/pins/<dir relative to /sys/fs/bpf>.h` (or `<file name>.h` for a
/// pin on another bpffs mount): one header per pin directory, at a path a
/// sampler can compute from the pin.
pub fn default_header_path(dir: &Path) -> PathBuf {
    let rel = dir.strip_prefix(BPFFS).ok().filter(|r| !r.as_os_str().is_empty());
    let rel = rel.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(dir.file_name().unwrap_or_default()));
    let mut p = Path::new("/run/ebq/pins").join(rel).into_os_string();
    p.push(".h");
    PathBuf::from(p)
}

/// The pins and header of one query; dropping it removes them unless kept.
#[derive(Debug)]
pub struct Pins {
    dir: PathBuf,
    pinned: Vec<PathBuf>,
    header: Option<PathBuf>,
    keep: bool,
}

impl Pins {
    /// The pin directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The header's path (once written).
    pub fn header(&self) -> Option<&Path> {
        self.header.as_deref()
    }

    /// True when the pins outlive the query.
    pub fn keep(&self) -> bool {
        self.keep
    }

    /// Records a pinned object (so it is removed on drop).
    pub(super) fn pinned(&mut self, path: PathBuf) {
        self.pinned.push(path);
    }

    /// Writes the header (parents created).
    pub(super) fn write_header(&mut self, path: &Path, text: &str) -> Result<()> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(format!("create {}", parent.display()), e))?;
        }
        std::fs::write(path, text).map_err(|e| io(format!("write the pin header {}", path.display()), e))?;
        self.header = Some(path.to_path_buf());
        Ok(())
    }
}

impl Drop for Pins {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for p in &self.pinned {
            let _ = std::fs::remove_file(p);
        }
        let _ = std::fs::remove_dir(&self.dir);
        if let Some(h) = &self.header {
            let _ = std::fs::remove_file(h);
        }
    }
}

fn io(what: String, e: std::io::Error) -> Error {
    Error::Io { what, source: e }
}

fn is_bpffs(path: &Path) -> std::io::Result<bool> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: c is a NUL-terminated path; st is a statfs for the kernel to fill.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_type as i64 == BPF_FS_MAGIC)
}

/// Mounts bpffs at [`BPFFS`] (`mount -t bpf bpf /sys/fs/bpf`).
fn mount_bpffs() -> std::io::Result<()> {
    let (src, target, fstype) = (c"bpf", c"/sys/fs/bpf", c"bpf");
    // SAFETY: all three are NUL-terminated constants; no mount data.
    if unsafe { libc::mount(src.as_ptr(), target.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Checks `options.dir` (absolute, absent, on bpffs: mounted at /sys/fs/bpf
/// if missing there), creates it and returns the guard that removes it.
pub(super) fn create_dir(options: &PinOptions) -> Result<Pins> {
    let dir = &options.dir;
    let shown = dir.display();
    options.check()?;
    if dir.starts_with(BPFFS) && !is_bpffs(Path::new(BPFFS)).unwrap_or(false) {
        mount_bpffs().map_err(|e| io(format!("mount bpffs at {BPFFS} (for the pin {shown})"), e))?;
    }
    let parent = dir.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent).map_err(|e| io(format!("create the pin's parent {}", parent.display()), e))?;
    if !is_bpffs(parent).map_err(|e| io(format!("statfs {}", parent.display()), e))? {
        return Err(io(
            format!("pin at {shown}"),
            std::io::Error::other(format!(
                "{} is not on a BPF file system (bpffs); pin below {BPFFS}, or mount one with `mount -t bpf bpf DIR`",
                parent.display()
            )),
        ));
    }
    std::fs::create_dir(dir).map_err(|e| io(format!("create the pin directory {shown}"), e))?;
    Ok(Pins { dir: dir.clone(), pinned: vec![], header: None, keep: options.keep })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_path_mirrors_the_pin() {
        assert_eq!(default_header_path(Path::new("/sys/fs/bpf/ebq/reads")), Path::new("/run/ebq/pins/ebq/reads.h"));
        assert_eq!(default_header_path(Path::new("/mnt/bpf/x")), Path::new("/run/ebq/pins/x.h"));
    }
}
