//! What the report lists (issue 37 item 4): the files Darshan's POSIX
//! module would record, applied to the folded records (streamed or folded
//! in the kernel alike), the rest said in one line.
//!
//! - Darshan's default exclusions: paths that start with one of
//!   [`DARSHAN_EXCLUDED_DIRS`] are not recorded, but those under
//!   [`DARSHAN_INCLUDED_DIRS`] (darshan-runtime `lib/darshan-config.c`,
//!   `darshan_path_exclusions` and `darshan_path_inclusions`, 3.4; in
//!   `darshan-core.c` before); `DARSHAN_EXCLUDE_DIRS` (a comma list, or
//!   `none`) replaces the list, as it does for Darshan. ebq knows a file's
//!   mount point and its last path component (the kernel events carry the
//!   dentry), not its whole path: a file is left out when its mount point
//!   lies under an excluded directory (`/proc`, `/sys`, `/dev`, `/dev/shm`, a
//!   `/var` of its own), which is what its path starting with that directory
//!   means there. A file of `/usr` on the root file system cannot be told
//!   from one of `/home` by what the kernel events carry: it stays listed.
//! - Descriptors that are no file (pipes, sockets, anonymous inodes: eventfd,
//!   timerfd, epoll, io_uring, …) are left out of the file records and
//!   counted in [`NotListed::other`], by kind ([`other_kind`]): their pseudo
//!   file systems ([`OTHER_DESCRIPTOR_FS`]) are the kernel's internal mounts,
//!   in no mount table, so a system call's row names neither a file system
//!   nor a mount point for them; the kernel's name tells the kind
//!   (`pipe:[ino]`, `socket:[ino]`, `[timerfd]`).
//! - The report's own outputs (`--html`, `--trace`, `--darshan-log`, and the
//!   stdout/stderr ebq was given when they are files: the traced command
//!   inherits them), by device and inode.
//! - `--darshan-config FILE`: Darshan's config file (`DARSHAN_CONFIG_PATH`),
//!   its `NAME_EXCLUDE` and `NAME_INCLUDE` lines for the `POSIX` module (or
//!   `*`): `KEY regex,regex MOD,MOD`, `#` comments; the other keys are
//!   Darshan's runtime's and ignored here. A name is excluded when an
//!   exclusion regex matches it and no inclusion regex does (Darshan's
//!   `darshan_core_name_is_excluded`); the regexes are searched (unanchored,
//!   as `regexec`) in the file's name as ebq knows it and in its mount point
//!   followed by `/`, so a rule naming a file (`\.h5$`) or a mounted
//!   directory (`^/scratch/`) applies as in Darshan.

use super::posix::{self, Fold, Record};
use super::FileKey;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Darshan's default excluded directories (`darshan_path_exclusions`).
pub const DARSHAN_EXCLUDED_DIRS: [&str; 11] =
    ["/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/opt/", "/sbin/", "/sys/", "/proc/", "/var/"];

/// Directories Darshan records even under an excluded one (`darshan_path_inclusions`).
pub const DARSHAN_INCLUDED_DIRS: [&str; 1] = ["/var/opt/cray/dws/mounts/"];

/// The kernel's pseudo file systems of descriptors that are no file.
pub const OTHER_DESCRIPTOR_FS: [&str; 3] = ["pipefs", "sockfs", "anon_inodefs"];

/// What kind of descriptor that is no file `rec` is, if it is one: its
/// pseudo file system named, or no mount known (an internal mount's), by
/// the kernel's name.
pub fn other_kind(rec: &Record) -> Option<&'static str> {
    let by_name = || match rec.name.as_str() {
        n if n.starts_with("pipe:") => "pipe",
        n if n.starts_with("socket:") => "socket",
        n if n.starts_with('[') => "anonymous inode",
        // A system call's pipe or socket: the kernel's dentry has no name (it makes one when asked).
        _ => "pipe or socket",
    };
    match rec.fs_type.as_str() {
        "pipefs" => Some("pipe"),
        "sockfs" => Some("socket"),
        "anon_inodefs" => Some("anonymous inode"),
        "" if rec.mount_point.is_empty() => Some(by_name()),
        _ => None,
    }
}

/// Darshan's config file rules that apply to the POSIX module.
#[derive(Debug, Default, Clone)]
pub struct DarshanConfig {
    pub name_exclude: Vec<Regex>,
    pub name_include: Vec<Regex>,
}

impl DarshanConfig {
    /// Reads a Darshan config file (`--darshan-config FILE`).
    pub fn read(path: &Path) -> Result<DarshanConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("--darshan-config {}: {e}", path.display()))?;
        DarshanConfig::parse(&text).map_err(|e| format!("--darshan-config {}:{e}", path.display()))
    }

    /// Parses a config's text; an error says `LINE: what`.
    pub fn parse(text: &str) -> Result<DarshanConfig, String> {
        let mut config = DarshanConfig::default();
        for (i, line) in text.lines().enumerate() {
            let mut words = line.split_whitespace();
            let Some(key) = words.next().filter(|k| !k.starts_with('#')) else { continue };
            let list = match key {
                "NAME_EXCLUDE" => &mut config.name_exclude,
                "NAME_INCLUDE" => &mut config.name_include,
                _ => continue,
            };
            let (Some(regexes), Some(modules)) = (words.next(), words.next()) else {
                return Err(format!("{}: {key} needs a regex list and a module list (`{key} regex,… POSIX`)", i + 1));
            };
            if !modules.split(',').any(|m| m == "*" || m == "POSIX") {
                continue;
            }
            for r in regexes.split(',').filter(|r| !r.is_empty()) {
                list.push(Regex::new(r).map_err(|e| format!("{}: {key} regex `{r}`: {e}", i + 1))?);
            }
        }
        Ok(config)
    }

    /// Darshan's rule: excluded by a NAME_EXCLUDE regex and not kept by a NAME_INCLUDE one.
    fn excludes(&self, rec: &Record) -> bool {
        let mount = format!("{}/", rec.mount_point.trim_end_matches('/'));
        let hit = |rs: &[Regex]| rs.iter().any(|r| r.is_match(&rec.name) || r.is_match(&mount));
        hit(&self.name_exclude) && !hit(&self.name_include)
    }
}

/// What decides the listing: the excluded directories, the config's regexes, the outputs.
#[derive(Debug, Default)]
pub struct Listing {
    /// Darshan's excluded directories (`DARSHAN_EXCLUDE_DIRS` or the defaults).
    pub excluded_dirs: Vec<String>,
    /// The default inclusions apply (not when `DARSHAN_EXCLUDE_DIRS` set the list, as in Darshan).
    pub default_inclusions: bool,
    pub config: DarshanConfig,
    /// The report's own output files (device, inode).
    pub outputs: Vec<FileKey>,
}

impl Listing {
    /// Darshan's defaults, or `DARSHAN_EXCLUDE_DIRS` (`exclude_dirs`) when set.
    pub fn new(exclude_dirs: Option<&str>, config: DarshanConfig, outputs: &[PathBuf]) -> Listing {
        let (excluded_dirs, default_inclusions) = match exclude_dirs {
            Some("none") => (vec![], false),
            Some(list) => (list.split(',').filter(|d| !d.is_empty()).map(str::to_string).collect(), false),
            None => (DARSHAN_EXCLUDED_DIRS.map(str::to_string).to_vec(), true),
        };
        let mut keys: Vec<FileKey> = outputs.iter().filter_map(|p| file_key(std::fs::metadata(p).ok()?)).collect();
        keys.extend([1, 2].into_iter().filter_map(fd_file));
        Listing { excluded_dirs, default_inclusions, config, outputs: keys }
    }

    /// Under an excluded directory: its mount point followed by `/` starts with one.
    fn under_excluded_dir(&self, rec: &Record) -> bool {
        !rec.mount_point.is_empty() && self.path_excluded(&format!("{}/", rec.mount_point.trim_end_matches('/')))
    }

    /// A path under an excluded directory (and not under a default
    /// inclusion): Darshan's `darshan_core_excluded_path`, which its STDIO
    /// module asks with the path a stream was opened on.
    pub fn path_excluded(&self, path: &str) -> bool {
        self.excluded_dirs.iter().any(|d| path.starts_with(d.as_str()))
            && !(self.default_inclusions && DARSHAN_INCLUDED_DIRS.iter().any(|d| path.starts_with(d)))
    }
}

/// A regular file's (device, inode).
fn file_key(m: std::fs::Metadata) -> Option<FileKey> {
    use std::os::unix::fs::MetadataExt;
    let dev = m.dev();
    m.is_file().then(|| FileKey {
        dev_major: libc::major(dev) as u32,
        dev_minor: libc::minor(dev) as u32,
        inode: m.ino(),
    })
}

/// The file ebq's descriptor `fd` is, when it is a regular file.
fn fd_file(fd: i32) -> Option<FileKey> {
    file_key(std::fs::metadata(format!("/proc/self/fd/{fd}")).ok()?)
}

/// What was left out of the file records, and why.
#[derive(Debug, Default, Clone)]
pub struct NotListed {
    /// Descriptors that are no file, per kind ([`other_kind`]): (descriptors, reads, writes, bytes).
    pub other: BTreeMap<String, [i64; 4]>,
    /// Files under Darshan's excluded directories.
    pub excluded_dirs: usize,
    /// Files a `NAME_EXCLUDE` of the Darshan config matched.
    pub name_excluded: usize,
    /// The report's own outputs.
    pub outputs: usize,
}

impl NotListed {
    /// The one-line summary of the other descriptors, if there were any.
    pub fn other_line(&self) -> Option<String> {
        let sum = |i: usize| self.other.values().map(|v| v[i]).sum::<i64>();
        (!self.other.is_empty()).then(|| {
            let kinds: Vec<String> = self.other.iter().map(|(fs, v)| format!("{fs} {}", v[0])).collect();
            format!(
                "other descriptors (pipes, sockets, anonymous inodes; no file, not listed): {} ({}), {} reads, {} writes, {} bytes",
                sum(0),
                kinds.join(", "),
                sum(1),
                sum(2),
                sum(3)
            )
        })
    }
}

/// Leaves out of `fold` what Darshan would not list, and says what.
pub fn apply(fold: &mut Fold, listing: &Listing) -> NotListed {
    let mut out = NotListed::default();
    fold.files.retain(|key, rec| {
        if let Some(kind) = other_kind(rec) {
            let calls = |what: &str| rec.get(&format!("POSIX_{what}"));
            let e = out.other.entry(kind.to_string()).or_default();
            e[0] += 1;
            e[1] += calls("READS");
            e[2] += calls("WRITES");
            e[3] += rec.bytes();
            return false;
        }
        let (dir, name, own) =
            (listing.under_excluded_dir(rec), listing.config.excludes(rec), listing.outputs.contains(key));
        out.excluded_dirs += dir as usize;
        out.name_excluded += (!dir && name) as usize;
        out.outputs += (!dir && !name && own) as usize;
        !(dir || name || own)
    });
    fold.filesystems = posix::filesystems(&fold.files);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, fs: &str, mount: &str) -> Record {
        Record::new(name, fs, mount)
    }

    #[test]
    fn darshan_config_reads_posix_name_rules_and_says_where_it_is_wrong() {
        let c = DarshanConfig::parse(
            "# site config\nMODMEM 8\nNAME_EXCLUDE \\.h5$,^core POSIX,MPI-IO\n  NAME_EXCLUDE x STDIO\nNAME_INCLUDE keep\\.h5 *\n",
        )
        .unwrap();
        assert_eq!((c.name_exclude.len(), c.name_include.len()), (2, 1));
        assert!(c.excludes(&rec("out.h5", "ext4", "/")));
        assert!(!c.excludes(&rec("keep.h5", "ext4", "/")), "an inclusion supersedes");
        assert!(!c.excludes(&rec("x", "ext4", "/")), "a rule of another module");
        let err = DarshanConfig::parse("\nNAME_EXCLUDE ( POSIX\n").unwrap_err();
        assert!(err.starts_with("2: NAME_EXCLUDE regex `(`"), "{err}");
        let err = DarshanConfig::parse("NAME_INCLUDE a\n").unwrap_err();
        assert!(err.starts_with("1: NAME_INCLUDE needs"), "{err}");
    }

    #[test]
    fn excluded_mounts_other_descriptors_and_outputs_are_left_out() {
        let mut files = BTreeMap::new();
        let key = |inode| FileKey { dev_major: 8, dev_minor: 1, inode };
        for (i, (name, fs, mount)) in [
            ("data", "ext4", "/"),
            ("stat", "proc", "/proc"),
            ("x.dat", "tmpfs", "/dev/shm"),
            ("pipe:[12]", "", ""),
            ("[timerfd]", "anon_inodefs", ""),
            ("mine.html", "ext4", "/"),
            ("dws", "lustre", "/var/opt/cray/dws/mounts/a"),
        ]
        .into_iter()
        .enumerate()
        {
            files.insert(key(i as u64), rec(name, fs, mount));
        }
        let mut fold = Fold { filesystems: posix::filesystems(&files), files };
        let listing = Listing { outputs: vec![key(5)], ..Listing::new(None, DarshanConfig::default(), &[]) };
        let left = apply(&mut fold, &listing);
        let names: Vec<&str> = fold.files.values().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["data", "dws"]);
        assert_eq!((left.excluded_dirs, left.outputs, left.other.len()), (2, 1, 2));
        assert!(left.other_line().unwrap().contains(": 2 (anonymous inode 1, pipe 1)"), "{:?}", left.other_line());
        assert_eq!(fold.filesystems.len(), 2);
        // DARSHAN_EXCLUDE_DIRS=none: nothing by directory.
        let none = Listing::new(Some("none"), DarshanConfig::default(), &[]);
        assert!(!none.under_excluded_dir(&rec("stat", "proc", "/proc")));
    }
}
