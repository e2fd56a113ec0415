//! Malformed query files the CLI must refuse: not UTF-8. The malformed-input
//! corpus (mutations of valid queries that must never panic and must fail
//! with positioned errors) is a pure test against the fixture kernel:
//! `crates/ebq/tests/malformed.rs`.

use crate::common;

/// The CLI refuses a query file that is not UTF-8: exit status 1 and a
/// message naming the file and the problem, for running and for explain.
#[test]
fn cli_refuses_non_utf8_query_files() {
    let dir = std::env::temp_dir().join(format!("ebq-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases: [(&str, &[u8]); 4] = [
        ("latin1", b"SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'caf\xe9'"),
        ("invalid-start", b"\xff\xfeSELECT COUNT(*) FROM syscalls.sys_enter_read"),
        ("truncated-utf8", b"SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm = '\xe2\x98'"),
        ("nul-and-high", b"SELECT\x00\x80\x81 FROM x"),
    ];
    let mut problems = vec![];
    for (name, bytes) in cases {
        let file = dir.join(format!("{name}.sql"));
        std::fs::write(&file, bytes).unwrap();
        for args in [vec!["--duration", "0.1", "-f"], vec!["explain", "-f"]] {
            let out = std::process::Command::new(common::ebq_bin())
                .args(&args)
                .arg(&file)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let clear = stderr.contains("UTF-8") && stderr.contains(&format!("{name}.sql"));
            if out.status.code() != Some(1) || !clear || stderr.contains("panicked") {
                problems.push(format!("ebq {} {name}.sql: {:?}\n{stderr}", args.join(" "), out.status));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
