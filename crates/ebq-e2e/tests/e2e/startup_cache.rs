//! Issue 16 items 4 and 5: the object cache (a query seen before starts
//! without clang; damaged entries and unsafe directories; `--no-cache`) and
//! a `-c` command that ends at once still has every event counted.

use crate::common;

use common::{ebq_bin, workload_bin};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SQL: &str = "SELECT COUNT(*) AS n FROM syscalls.sys_enter_read WHERE comm = 'ebqcache'";

/// A private cache directory and a clang wrapper that logs each run.
struct Setup {
    dir: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let dir = std::env::temp_dir().join(format!("ebq-startup-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cache")).unwrap();
        std::fs::set_permissions(dir.join("cache"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let clang = ebq::runtime::env::find_clang().unwrap();
        let wrapper = dir.join("clang");
        let log = dir.join("clang.log");
        std::fs::write(
            &wrapper,
            format!("#!/bin/sh\necho run >> {}\nexec {} \"$@\"\n", log.display(), clang.display()),
        )
        .unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        Setup { dir }
    }

    /// Runs `ebq -c 'readzero --count N' SQL` plus `extra`; returns its output.
    fn run(&self, count: u32, extra: &[&str]) -> Output {
        let cmd = format!("{} readzero --count {count} --comm ebqcache", workload_bin().display());
        Command::new(ebq_bin())
            .env("EBQ_CACHE_DIR", self.dir.join("cache"))
            .env("EBQ_CLANG", self.dir.join("clang"))
            .args(["-c", &cmd, "--format", "json", SQL])
            .args(extra)
            .output()
            .unwrap()
    }

    /// The count the query printed (the run must have succeeded).
    fn count(&self, count: u32, extra: &[&str]) -> u64 {
        let out = self.run(count, extra);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        // The workload prints its own report to the same stdout: the row is the line with `n`.
        let rows: Vec<serde_json::Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let n: Vec<u64> = rows.iter().filter_map(|r| r["n"].as_u64()).collect();
        assert_eq!(n.len(), 1, "{rows:?}");
        n[0]
    }

    fn clang_runs(&self) -> usize {
        std::fs::read_to_string(self.dir.join("clang.log")).map_or(0, |s| s.lines().count())
    }

    fn entries(&self) -> Vec<PathBuf> {
        let objects = self.dir.join("cache").join("objects");
        std::fs::read_dir(objects).unwrap().map(|e| e.unwrap().path()).collect()
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_query_seen_before_starts_without_clang_and_no_cache_compiles() {
    let s = Setup::new("hit");
    assert_eq!(s.count(100, &[]), 100);
    assert_eq!(s.clang_runs(), 1, "first run compiles");
    assert_eq!(s.count(200, &[]), 200);
    assert_eq!(s.clang_runs(), 1, "second run loads the cached object");
    assert_eq!(s.count(300, &["--no-cache"]), 300);
    assert_eq!(s.clang_runs(), 2, "--no-cache compiles");
    assert_eq!(s.entries().len(), 1, "one entry, no temporary files left");
    let mode = std::fs::metadata(&s.entries()[0]).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_damaged_entry_is_detected_and_rebuilt() {
    let s = Setup::new("damaged");
    assert_eq!(s.count(10, &[]), 10);
    let entry = s.entries().remove(0);
    let mut bytes = std::fs::read(&entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&entry, &bytes).unwrap();
    assert_eq!(s.count(20, &[]), 20);
    assert_eq!(s.clang_runs(), 2, "the damaged entry was not loaded: clang ran again");
    assert_ne!(std::fs::read(&entry).unwrap(), bytes, "the entry was rewritten");
    assert_eq!(s.count(30, &[]), 30);
    assert_eq!(s.clang_runs(), 2, "the rebuilt entry is used");
}

#[test]
fn an_unsafe_cache_directory_is_refused() {
    let s = Setup::new("unsafe");
    let cache = s.dir.join("cache");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = s.run(1, &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!("the object cache {} is writable by group or others (mode 777)", cache.display());
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("--no-cache"), "{err}");
    assert_eq!(s.count(5, &["--no-cache"]), 5, "--no-cache does not touch the directory");
    let link = s.dir.join("link");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&cache, &link).unwrap();
    let out = Command::new(ebq_bin()).env("EBQ_CACHE_DIR", &link).args(["-c", "true", SQL]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a symlink"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!Path::new(&link).join("objects").exists());
}

/// The command ends a few milliseconds after it starts; ebq wakes on its
/// exit and must still count every read it made.
#[test]
fn a_command_that_ends_at_once_has_every_read_counted() {
    let s = Setup::new("quick");
    for n in [1, 7, 5000] {
        assert_eq!(s.count(n, &[]), n as u64);
    }
}
