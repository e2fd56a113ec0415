//! `/proc/self/mountinfo`, parsed in one place for its two readers: the
//! cgroup2 root ([`super::cgroups`]) and the report's mount names (mount id →
//! file system type and mount point). One parser, so both undo the kernel's
//! escapes in paths the same way.

/// One line of mountinfo: the fields ebq reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountEntry {
    /// The mount id (the first field; `file_mount_id` in the kernel).
    pub id: u32,
    /// Where it is mounted, as this process's root sees it, escapes undone.
    pub mount_point: String,
    /// The file system type (`ext4`, `cgroup2`, …), escapes undone.
    pub fs_type: String,
}

/// The mounts as `/proc/self/mountinfo` has them now (none if it cannot be read).
pub fn read() -> Vec<MountEntry> {
    parse(&std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default())
}

/// mountinfo's lines: `ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [TAGS…] - FSTYPE SOURCE SUPER_OPTIONS`,
/// with spaces, tabs, newlines and backslashes in paths escaped as `\ooo`.
/// A line that is not in this shape is passed over.
pub fn parse(text: &str) -> Vec<MountEntry> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let id = fields.first()?.parse().ok()?;
            let mount_point = unescape(fields.get(4)?);
            let fs_type = unescape(after.split(' ').next()?);
            Some(MountEntry { id, mount_point, fs_type })
        })
        .collect()
}

/// `\040` → ' ' (octal escapes, as the kernel's `seq_escape` writes them).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b.get(i + 1..i + 4).filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_name_their_mounts_with_escapes_undone() {
        let text = "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n\
                    31 22 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw\n\
                    40 22 7:0 / /mnt/with\\040space rw - ext4 /dev/loop0 rw\n\
                    not a mountinfo line\n";
        let m = parse(text);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], MountEntry { id: 22, mount_point: "/".into(), fs_type: "ext4".into() });
        assert_eq!(m[1], MountEntry { id: 31, mount_point: "/dev/shm".into(), fs_type: "tmpfs".into() });
        assert_eq!(m[2].mount_point, "/mnt/with space");
    }
}
