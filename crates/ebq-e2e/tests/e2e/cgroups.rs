//! Containers (issue 19): `--cgroup PATH` scopes events in the kernel to a
//! cgroup v2 group, and `cgroup_path(cgroup)` (or the bare column
//! `cgroup_path`, grouped by the id in the kernel) names the group, in rows and
//! as an `ebq serve` label. A workload
//! moved into a group this test creates is counted exactly (its own report),
//! an identical one outside it not at all, and the path ebq prints is the one
//! the kernel shows in the workload's /proc/PID/cgroup.

use crate::common;

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

/// A cgroup v2 group made for one test, `/ebq-test-{tag}{pid}`, with a temp
/// directory of the same name for the workloads' reports; both go on drop
/// (the group once its processes have exited, which they have by then).
pub(crate) struct TestGroup {
    pub(crate) name: String,
    pub(crate) group: PathBuf,
    dir: PathBuf,
}

impl TestGroup {
    pub(crate) fn new(tag: &str) -> TestGroup {
        let name = format!("ebq-test-{tag}{}", std::process::id());
        let group = cgroup2_root().join(&name);
        std::fs::create_dir_all(&group).unwrap();
        let dir = std::env::temp_dir().join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        TestGroup { name, group, dir }
    }
}

impl Drop for TestGroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.group);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn cgroup_scope_counts_only_the_group_and_names_it() {
    let made = TestGroup::new("");
    let (name, group, dir) = (&made.name, &made.group, &made.dir);
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
    // Accounting (-c and --cgroup, one event): n + missed + fork/exit missed + untracked =
    // the inside workload's calls (17); exact when none.
    let stats = common::cli_stats(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(inside["total_calls"], 17);
    common::assert_exact_or_accounted(rows[0]["n"].as_u64().unwrap(), 17, &stats, "preads inside the group");
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

/// This process's cgroup v2 path, as the kernel shows it in /proc/self/cgroup.
fn own_cgroup() -> String {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    text.lines().find_map(|l| l.strip_prefix("0::")).expect("cgroup v2").to_string()
}

#[test]
fn bare_cgroup_path_groups_by_the_group_in_the_kernel_and_names_it() {
    // No --cgroup scope: two identical workloads, one moved into a test-made group,
    // each counted under its own group's path.
    let made = TestGroup::new("bare-");
    let (name, group, dir) = (&made.name, &made.group, &made.dir);
    let (w, d, g) = (workload_bin(), dir.display(), group.display());
    let w = w.display();
    let cmd = format!(
        "sh -c 'echo $$ > {g}/cgroup.procs; exec {w} pread --fds 1 --calls 17 --fd-base 100 --comm ebq-cg2 \
         --report {d}/in.json' & {w} pread --fds 1 --calls 9 --fd-base 100 --comm ebq-cg2 --report {d}/out.json; wait"
    );
    let sql = "SELECT cgroup_path, container_id, COUNT(*) AS n FROM syscalls.sys_enter_pread64 \
               WHERE comm = 'ebq-cg2' GROUP BY cgroup_path ORDER BY n DESC";
    let out = Command::new(ebq_bin()).args(["-c", &cmd, "--format", "json", sql]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Json> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"cgroup_path\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let got: Vec<(String, u64)> =
        rows.iter().map(|r| (r["cgroup_path"].as_str().unwrap().to_string(), r["n"].as_u64().unwrap())).collect();
    // The outer workload stays in the test's own group (ebq -c forks it there).
    assert_eq!(got, [(format!("/{name}"), 17), (own_cgroup(), 9)], "{rows:?}");
    assert!(rows.iter().all(|r| r["container_id"] == ""), "{rows:?}");
}

#[test]
fn ebq_serve_labels_series_with_the_cgroup_path() {
    use common::{free_port, http_get, sample};
    let made = TestGroup::new("serve-");
    let (name, group, dir) = (&made.name, &made.group, &made.dir);
    let port = free_port();
    let config = dir.join("ebq.toml");
    std::fs::write(
        &config,
        format!(
            "listen = \"127.0.0.1:{port}\"\n\n[[query]]\nname = \"cg\"\nsql = \"SELECT cgroup_path, COUNT(*) AS calls \
             FROM syscalls.sys_enter_pread64 WHERE comm = 'ebq-cg3' GROUP BY cgroup_path WINDOW(time, 500)\"\n"
        ),
    )
    .unwrap();
    let log = dir.join("ebq.log");
    let daemon = common::Background(
        Command::new(ebq_bin())
            .args(["serve", "--config"])
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let wait = |what: &str, cond: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !cond() {
            assert!(std::time::Instant::now() < deadline, "{what}: {}", std::fs::read_to_string(&log).unwrap());
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait("ebq serve attached", &|| std::fs::read_to_string(&log).unwrap_or_default().contains("capabilities reduced"));
    let (w, d, g) = (workload_bin(), dir.display(), group.display());
    let w = w.display();
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "sh -c 'echo $$ > {g}/cgroup.procs; exec {w} pread --fds 1 --calls 23 --fd-base 100 --comm ebq-cg3 \
             --report {d}/in.json'"
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let series = format!("ebq_cg_calls_total{{cgroup_path=\"/{name}\"}}");
    let page = || http_get(port, "/metrics").map(|(_, body)| body).unwrap_or_default();
    wait("the group's series", &|| sample(&page(), &series) == Some(23.0));
    // Stays exact over later windows (no event of the group after the workload).
    std::thread::sleep(std::time::Duration::from_millis(1200));
    assert_eq!(sample(&page(), &series), Some(23.0), "{}", page());
    daemon.stop();
}
