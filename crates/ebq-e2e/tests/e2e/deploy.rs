//! Issue 19 item 6: the Kubernetes DaemonSet, its ConfigMap and the container
//! build file in deploy/. The manifests are checked against the Kubernetes
//! OpenAPI schemas by a checker nobody here wrote (kubernetes-validate, PyPI,
//! strict: unknown fields fail), which must also refuse broken variants; the
//! ConfigMap's ebq.toml passes `ebq serve --check`; the DaemonSet runs `ebq
//! serve` in the host PID namespace with the host paths ebq reads.
//!
//! Issue 38 item 5: the DaemonSet, read as YAML, is not privileged: it adds
//! exactly the capabilities measured (docs/src/serve/deploy.md) to none, has
//! a read-only root with writable emptyDirs only where ebq writes, no
//! service-account token, CPU and memory limits, and probes on the paths that
//! answer without credentials (`/ready`, `/healthz`; their behaviour with TLS
//! and basic auth is `serve_tls::`). The image is Debian packages and the
//! release binary.

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
        (
            "a string where a boolean goes",
            "readOnlyRootFilesystem: true",
            "readOnlyRootFilesystem: \"yes\"",
            "is not of type 'boolean'",
        ),
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

/// The capabilities the DaemonSet adds: what `ebq serve` was measured to need.
const CAPABILITIES: [&str; 2] = ["BPF", "PERFMON"];

#[test]
fn the_daemonset_runs_serve_unprivileged_read_only_limited_and_probed() {
    let d: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(manifest("daemonset.yaml")).unwrap()).unwrap();
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["hostPID"], true);
    assert_eq!(pod["automountServiceAccountToken"], false);
    let containers = pod["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let strs = |v: &serde_yaml::Value| -> Vec<String> {
        v.as_sequence().unwrap_or(&vec![]).iter().map(|s| s.as_str().unwrap().to_string()).collect()
    };
    assert_eq!(strs(&c["args"]), ["serve", "--config", "/etc/ebq/ebq.toml"]);

    let sc = &c["securityContext"];
    assert_ne!(sc["privileged"], true, "not privileged");
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(strs(&sc["capabilities"]["drop"]), ["ALL"]);
    assert_eq!(strs(&sc["capabilities"]["add"]), CAPABILITIES);

    let res = &c["resources"];
    for (kind, what) in [("requests", "cpu"), ("requests", "memory"), ("limits", "cpu"), ("limits", "memory")] {
        assert!(res[kind][what].as_str().is_some_and(|v| !v.is_empty()), "resources.{kind}.{what}");
    }

    // Both probes on the paths that need no credentials, on the metrics port.
    for (probe, path) in [("readinessProbe", "/ready"), ("livenessProbe", "/healthz")] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["port"], "metrics", "{probe}");
    }
    assert_eq!(c["ports"][0]["name"], "metrics");

    // Writable: only emptyDirs (caches, clang's scratch, pin headers) and bpffs (pins).
    let volumes: Vec<&serde_yaml::Value> = pod["volumes"].as_sequence().unwrap().iter().collect();
    let volume = |name: &str| *volumes.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("volume {name}"));
    let mut writable = vec![];
    for m in c["volumeMounts"].as_sequence().unwrap() {
        let (name, at) = (m["name"].as_str().unwrap(), m["mountPath"].as_str().unwrap().to_string());
        let v = volume(name);
        if m["readOnly"] == true {
            continue;
        }
        let bpffs = v["hostPath"]["path"] == "/sys/fs/bpf";
        assert!(v["emptyDir"].is_mapping() || bpffs, "{at} is writable but neither an emptyDir nor bpffs");
        writable.push(at);
    }
    writable.sort();
    assert_eq!(writable, ["/run/ebq", "/sys/fs/bpf", "/tmp", "/var/cache/ebq"]);
    let env: Vec<(String, String)> = c["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().into(), e["value"].as_str().unwrap().into()))
        .collect();
    assert!(env.contains(&("EBQ_CACHE_DIR".into(), "/var/cache/ebq/cache".into())), "{env:?}");
    assert!(env.contains(&("TMPDIR".into(), "/tmp".into())), "{env:?}");
    for host in ["/sys/kernel/tracing", "/sys/fs/cgroup"] {
        assert!(volumes.iter().any(|v| v["hostPath"]["path"] == host), "no hostPath {host}");
    }
    assert!(volumes.iter().any(|v| v["configMap"]["name"] == "ebq-config"));

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
    assert!(cm.contains("    reload_on_change = "), "a ConfigMap update reaches the daemon without a signal");
}

#[test]
fn the_container_image_is_debian_packages_and_the_release_binary() {
    let c = std::fs::read_to_string(deploy().join("Containerfile")).unwrap();
    let stages: Vec<&str> = c.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages, ["FROM docker.io/library/debian:bookworm-slim"]);
    assert!(c.contains("COPY target/release/ebq /usr/local/bin/ebq"));
    // ebq runs clang on each query's C: the image keeps clang and the headers.
    for pkg in ["clang", "libbpf-dev", "linux-libc-dev", "libelf1", "zlib1g", "librdkafka1"] {
        assert!(c.contains(&format!(" {pkg} ")), "the image lacks {pkg}");
    }
    assert!(c.contains("ENV EBQ_CACHE_DIR=/var/cache/ebq/cache TMPDIR=/tmp"));
    // The context leaves out target/ but the binary.
    let ignore = std::fs::read_to_string(deploy().join("../.dockerignore")).unwrap();
    assert_eq!(ignore.lines().take(2).collect::<Vec<_>>(), ["target/", "!target/release/ebq"]);
    // The binary's shared libraries are the packages' (libbpf is linked in).
    let ldd = Command::new("ldd").arg(ebq_bin()).output().unwrap();
    let libs = String::from_utf8_lossy(&ldd.stdout);
    for lib in libs.lines().filter_map(|l| l.split_whitespace().next()) {
        assert!(
            // librdkafka1 (the Kafka sink) depends on liblz4-1, libzstd1, libsasl2-2 and libssl3.
            [
                "linux-vdso",
                "libelf.so",
                "libz.so",
                "libgcc_s",
                "libm.so",
                "libc.so",
                "/lib64/ld-linux",
                "librdkafka.so",
                "liblz4.so",
                "libzstd.so",
                "libsasl2.so",
                "libssl.so",
                "libcrypto.so",
            ]
            .iter()
            .any(|known| lib.starts_with(known)),
            "{lib} is in no package the image installs:\n{libs}"
        );
    }
}
