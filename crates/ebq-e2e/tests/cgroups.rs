//! Containers (issue 19): `--cgroup PATH` scopes events in the kernel to a
//! cgroup v2 group, and `cgroup_path(cgroup)` names the group. A workload
//! moved into a group this test creates is counted exactly (its own report),
//! an identical one outside it not at all, and the path ebq prints is the one
//! the kernel shows in the workload's /proc/PID/cgroup.

mod common;

use common::{ebq_bin, workload_bin};
use serde_json::Value as Json;
use std::path::PathBuf;
use std::process::Command;

/// The cgroup2 mount, read from /proc/self/mountinfo here (not through ebq).
fn cgroup2_root() -> PathBuf {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line =
        info.lines().find(|l| l.split(" - ").nth(1).is_some_and(|r| r.starts_with("cgroup2 "))).expect("cgroup2");
    PathBuf::from(line.split(' ').nth(4).unwrap())
}

#[test]
fn cgroup_scope_counts_only_the_group_and_names_it() {
    let name = format!("ebq-test-{}", std::process::id());
    let group = cgroup2_root().join(&name);
    std::fs::create_dir_all(&group).unwrap();
    let dir = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let (w, d, g) = (workload_bin(), dir.display(), group.display());
    let w = w.display();
    // The inner shell moves itself into the group, notes its cgroup as the kernel
    // shows it, and becomes the workload; the outer workload stays where it is.
    let cmd = format!(
        "sh -c 'echo $$ > {g}/cgroup.procs; grep ^0:: /proc/self/cgroup > {d}/cg; \
         exec {w} pread --fds 1 --calls 17 --fd-base 100 --comm ebq-cg --report {d}/in.json' & \
         {w} pread --fds 1 --calls 9 --fd-base 100 --comm ebq-cg --report {d}/out.json; wait"
    );
    let sql = "SELECT cgroup_path(cgroup) AS path, container_id(cgroup) AS container, COUNT(*) AS n \
               FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-cg' GROUP BY cgroup";
    let out = Command::new(ebq_bin())
        .args(["--cgroup", &format!("/{name}"), "-c", &cmd, "--format", "json", sql])
        .output()
        .unwrap();
    let _ = std::fs::remove_dir(&group);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = |f: &str| -> Json { serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap() };
    let (inside, outside) = (report("in.json"), report("out.json"));
    assert_eq!(outside["total_calls"], 9, "the workload outside the group ran too");
    let kernel_path = std::fs::read_to_string(dir.join("cg")).unwrap().trim().trim_start_matches("0::").to_string();
    assert_eq!(kernel_path, format!("/{name}"));
    let rows: Vec<Json> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"path\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "only the group's events: {rows:?}");
    assert_eq!(rows[0]["path"], kernel_path);
    assert_eq!(rows[0]["container"], "");
    assert_eq!(rows[0]["n"], inside["total_calls"]);
    assert_eq!(rows[0]["n"], 17);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_path_that_is_no_cgroup_is_refused_before_anything_runs() {
    let out = Command::new(ebq_bin())
        .args(["--cgroup", "/no-such-group-ebq", "-c", "true", "SELECT COUNT(*) FROM raw_syscalls.sys_enter"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: --cgroup: cgroup ") && err.contains("no-such-group-ebq"), "{err}");
    assert!(!err.contains("ebq: tracing"), "{err}");
}
