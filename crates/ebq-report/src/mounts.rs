//! Mount ids → (file system type, mount point), from `/proc/self/mountinfo`.
//!
//! Why: the report's system-call rows carry the file's mount id, not its
//! file system type and mount point. Those two strings, read in the kernel at
//! every call's entry (a walk up the mount tree for the mount point), cost
//! the entry program 90–160 ns per call (`ebq explain --analyze` over fio,
//! 602–673 ns/run with them, 516 without), and they are the same for every
//! call on a mount. So they are named here, once per mount.
//!
//! The table is read when the report starts and again when a row names a
//! mount it has not seen (a mount made while the report runs). A mount made
//! and removed between two reads cannot be named: its files get an empty type
//! and mount point, as a file without a mount point always had. Paths are as
//! ebq's own root sees them, which is the traced command's (`-c`); the kernel
//! walk used the traced task's root.

use ebq::host::mountinfo;
use std::collections::HashMap;

/// What a mount is called.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mount {
    pub fs_type: String,
    pub mount_point: String,
}

/// The mounts by id, re-read on a miss.
#[derive(Debug, Default)]
pub struct Mounts {
    by_id: HashMap<u32, Mount>,
    /// Ids looked for and not found after a re-read (not read again for them).
    missing: std::collections::HashSet<u32>,
}

impl Mounts {
    /// The table as `/proc/self/mountinfo` has it now.
    pub fn read() -> Mounts {
        Mounts { by_id: by_id(mountinfo::read()), ..Default::default() }
    }

    /// A table of `text` in mountinfo's format (tests).
    #[cfg(test)]
    pub fn parsed(text: &str) -> Mounts {
        Mounts { by_id: by_id(mountinfo::parse(text)), ..Default::default() }
    }

    /// Mount `id` (0: none), re-reading the table once for an id it lacks.
    pub fn get(&mut self, id: u32) -> Option<&Mount> {
        if id == 0 || self.missing.contains(&id) {
            return None;
        }
        if !self.by_id.contains_key(&id) {
            self.by_id.extend(Mounts::read().by_id);
            if !self.by_id.contains_key(&id) {
                self.missing.insert(id);
                return None;
            }
        }
        self.by_id.get(&id)
    }
}

/// mountinfo's lines (`ebq::host::mountinfo`) as a table by mount id.
fn by_id(lines: Vec<mountinfo::MountEntry>) -> HashMap<u32, Mount> {
    lines.into_iter().map(|m| (m.id, Mount { fs_type: m.fs_type, mount_point: m.mount_point })).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_found_by_their_mount_id() {
        let m = by_id(mountinfo::parse("31 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n"));
        assert_eq!(m[&31], Mount { fs_type: "tmpfs".into(), mount_point: "/dev/shm".into() });
    }

    #[test]
    fn this_processs_root_mount_is_found_and_an_unknown_id_is_none() {
        let mut mounts = Mounts::read();
        let root = mounts.by_id.iter().find(|(_, m)| m.mount_point == "/").map(|(id, _)| *id);
        assert!(root.is_some_and(|id| mounts.get(id).is_some()), "{mounts:?}");
        assert_eq!(mounts.get(u32::MAX), None);
        assert_eq!(mounts.get(0), None);
    }
}
