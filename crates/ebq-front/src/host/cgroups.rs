//! cgroup v2 ids as paths and container ids, for `cgroup_path(cgroup)`,
//! `container_id(cgroup)` and `--cgroup PATH`.
//!
//! The kernel knows a task's cgroup by its 64-bit id (`bpf_get_current_cgroup_id`),
//! which on cgroup v2 is the inode number of the group's directory. User space
//! names it by walking the cgroup2 mount once and caching id → path; an id not
//! in the cache triggers a new walk (at most every 100 ms: a group created
//! after the last one). A group removed before it is named has no path ("").

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where cgroup v2 is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// on hybrid systems), from /proc/self/mountinfo.
pub fn cgroup2_root() -> Option<PathBuf> {
    super::mountinfo::read().into_iter().find(|m| m.fs_type == "cgroup2").map(|m| PathBuf::from(m.mount_point))
}

/// The path below the cgroup2 root (`/system.slice/docker-….scope`, `/` for
/// the root) of the group with id `id`; "" if no such group exists now.
pub fn cgroup_path(id: u64) -> String {
    static CACHE: Mutex<Option<(HashMap<u64, String>, Instant)>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((paths, _)) = cache.as_ref() {
        if let Some(p) = paths.get(&id) {
            return p.clone();
        }
    }
    let stale = cache.as_ref().is_none_or(|(_, at)| at.elapsed() >= Duration::from_millis(100));
    if stale {
        let mut paths = HashMap::new();
        if let Some(root) = cgroup2_root() {
            walk(&root, &root, &mut paths);
        }
        *cache = Some((paths, Instant::now()));
    }
    cache.as_ref().and_then(|(paths, _)| paths.get(&id).cloned()).unwrap_or_default()
}

fn walk(root: &Path, dir: &Path, paths: &mut HashMap<u64, String>) {
    let Ok(meta) = std::fs::metadata(dir) else { return };
    let rel = dir.strip_prefix(root).map(|r| format!("/{}", r.display())).unwrap_or_default();
    paths.insert(meta.ino(), rel);
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(root, &e.path(), paths);
        }
    }
}

/// The container id in a cgroup path: the 64-hex-digit id of the innermost
/// component that carries one, as Docker (`/docker/ID`,
/// `docker-ID.scope`), containerd (`cri-containerd-ID.scope`), CRI-O
/// (`crio-ID.scope`), Podman (`libpod-ID.scope`) and Kubernetes' kubepods
/// hierarchies (`…/kubepods-burstable-pod….slice/cri-containerd-ID.scope`,
/// `/kubepods/burstable/pod…/ID`) name them; "" outside containers.
pub fn container_id(path: &str) -> String {
    path.rsplit('/')
        .find_map(|c| {
            let c = c.strip_suffix(".scope").unwrap_or(c);
            let id = c.rsplit(['-', ':']).next()?;
            (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_string())
        })
        .unwrap_or_default()
}

/// The id and depth (the root is level 0) of the cgroup at `path`: absolute
/// (`/sys/fs/cgroup/unified/app`) or below the cgroup2 root (`/app`, `app`).
pub fn cgroup_of(path: &str) -> Result<(u64, u32), String> {
    let root = cgroup2_root().ok_or("cgroup v2 is not mounted (no cgroup2 in /proc/self/mountinfo)")?;
    let p = Path::new(path);
    let full = if p.starts_with(&root) { p.to_path_buf() } else { root.join(path.trim_start_matches('/')) };
    let meta = std::fs::metadata(&full).map_err(|e| format!("cgroup {}: {e}", full.display()))?;
    if !meta.is_dir() || !full.join("cgroup.procs").exists() {
        return Err(format!("{} is not a cgroup v2 group (no cgroup.procs)", full.display()));
    }
    let level = full.strip_prefix(&root).map_or(0, |r| r.components().count()) as u32;
    Ok((meta.ino(), level))
}

#[cfg(test)]
mod tests {
    use super::container_id;

    #[test]
    fn container_ids_from_runtime_paths() {
        let id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        for path in [
            format!("/docker/{id}"),
            format!("/system.slice/docker-{id}.scope"),
            format!("/system.slice/containerd.service/kubepods-besteffort-pod1234.slice:cri-containerd:{id}"),
            format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod5c6e.slice/cri-containerd-{id}.scope"
            ),
            format!("/kubepods.slice/kubepods-pod7.slice/crio-{id}.scope"),
            format!("/kubepods/burstable/pod1f2e/{id}"),
            format!("/machine.slice/libpod-{id}.scope/container"),
        ] {
            assert_eq!(container_id(&path), id, "{path}");
        }
        for path in ["/", "/user.slice/user-0.slice/session-3.scope", "/system.slice/docker.service", "/ebq-t"] {
            assert_eq!(container_id(path), "", "{path}");
        }
    }
}
