//! Issue 19 item 6: the Kubernetes DaemonSet, its ConfigMap and the container
//! build file in deploy/. The manifests are checked against the Kubernetes
//! OpenAPI schemas by a checker nobody here wrote (kubernetes-validate, PyPI,
//! strict: unknown fields fail), which must also refuse broken variants; the
//! ConfigMap's ebq.toml passes `ebq serve --check`; the DaemonSet runs `ebq
//! serve` privileged in the host PID namespace with the host paths ebq reads.

use crate::common;

use common::{ebq_bin, python_with};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Kubernetes version the manifests are checked against.
const KUBERNETES: &str = "1.30.0";

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// Runs deploy/kubernetes/validate.py on `files`: (exit code, stdout).
fn validate(files: &[PathBuf]) -> (i32, String) {
    let py = python_with("kubernetes_validate", "kubernetes-validate");
    let out =
        Command::new(py).arg(deploy().join("kubernetes/validate.py")).arg(KUBERNETES).args(files).output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn manifest(name: &str) -> PathBuf {
    deploy().join("kubernetes").join(name)
}

#[test]
fn the_manifests_pass_the_kubernetes_schemas_and_broken_ones_do_not() {
    let files: Vec<PathBuf> = ["namespace.yaml", "configmap.yaml", "daemonset.yaml"].map(manifest).into();
    let (code, out) = validate(&files);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().filter(|l| l.ends_with(": valid")).count(), 3, "{out}");

    let daemonset = std::fs::read_to_string(manifest("daemonset.yaml")).unwrap();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (what, from, to, complaint) in [
        ("a string where a boolean goes", "privileged: true", "privileged: \"yes\"", "is not of type 'boolean'"),
        ("a misspelt field", "hostPID: true", "hostPid: true", "'hostPid' was unexpected"),
        (
            "no selector",
            "  selector:\n    matchLabels:\n      app.kubernetes.io/name: ebq\n",
            "",
            "'selector' is a required",
        ),
    ] {
        let broken = dir.join("daemonset.yaml");
        assert!(daemonset.contains(from), "{what}: {from}");
        std::fs::write(&broken, daemonset.replacen(from, to, 1)).unwrap();
        let (code, out) = validate(&[broken]);
        assert_eq!(code, 1, "{what} passed: {out}");
        assert!(out.contains(complaint), "{what}: {out}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_daemonset_runs_serve_privileged_with_the_host_paths_and_the_configmap() {
    let d = std::fs::read_to_string(manifest("daemonset.yaml")).unwrap();
    for needed in [
        "hostPID: true",
        "privileged: true",
        "args: [\"serve\", \"--config\", \"/etc/ebq/ebq.toml\"]",
        "mountPath: /etc/ebq",
        "name: ebq-config",
        "path: /sys/kernel/btf",
        "path: /sys/kernel/tracing",
        "path: /sys/kernel/debug",
        "path: /sys/fs/cgroup",
        "path: /sys/fs/bpf",
    ] {
        assert!(d.contains(needed), "daemonset.yaml lacks `{needed}`");
    }
    // The ConfigMap's ebq.toml is a configuration ebq serve accepts.
    let cm = std::fs::read_to_string(manifest("configmap.yaml")).unwrap();
    let toml: String = cm
        .split_once("  ebq.toml: |\n")
        .expect("data: ebq.toml")
        .1
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("    ").unwrap_or(l)))
        .collect();
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("configmap-{}.toml", std::process::id()));
    std::fs::write(&file, toml).unwrap();
    let out = Command::new(ebq_bin()).args(["serve", "--check", "--config"]).arg(&file).output().unwrap();
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("2 queries OK"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_container_build_file_builds_ebq_from_this_repository_in_two_stages() {
    let c = std::fs::read_to_string(deploy().join("Containerfile")).unwrap();
    let stages: Vec<&str> = c.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert!(stages[0].ends_with(" AS build"), "{stages:?}");
    assert!(c.contains("COPY . ."), "the build stage copies this repository");
    assert!(c.contains("cargo build --release --locked -p ebq-cli"));
    assert!(c.contains("COPY --from=build /out/ebq /usr/local/bin/ebq"));
    // ebq runs clang on each query's C: the runtime stage keeps clang and the headers.
    let runtime = c.split(stages[1]).nth(1).unwrap();
    for pkg in ["clang", "libbpf-dev", "linux-libc-dev"] {
        assert!(runtime.contains(pkg), "the runtime stage lacks {pkg}");
    }
}
