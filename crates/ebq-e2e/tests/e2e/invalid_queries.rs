//! Invalid queries that need the `ebq` binary. The table of invalid queries
//! with their exact positions and messages is a pure test against the
//! fixture kernel: `crates/ebq/tests/invalid_queries.rs`.

use crate::common;

const READ: &str = "syscalls.sys_enter_read";

/// Long chains of binary operators (or long IN lists) bind and generate code
/// recursively, one stack frame per operand: a query of a few hundred
/// kilobytes (well under the 1 MiB limit) overflows the stack and aborts the
/// process instead of returning an error. Run in a child `ebq explain` so the
/// abort cannot take the test binary down.
#[test]
fn long_operator_chains_do_not_crash() {
    for (name, sql) in [
        ("a + chain", format!("SELECT COUNT(*) FROM {READ} WHERE fd = {}", vec!["1"; 50_000].join(" + "))),
        ("an OR chain", format!("SELECT COUNT(*) FROM {READ} WHERE {}", vec!["fd = 1"; 50_000].join(" OR "))),
        ("an IN list", format!("SELECT COUNT(*) FROM {READ} WHERE fd IN ({})", vec!["1"; 50_000].join(", "))),
    ] {
        let dir = std::env::temp_dir().join(format!("ebq-invalid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("q.sql");
        std::fs::write(&file, &sql).unwrap();
        let out = std::process::Command::new(common::ebq_bin()).arg("explain").arg("-f").arg(&file).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "{name} of 50000 operands: ebq explain died ({:?}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr).chars().take(400).collect::<String>()
        );
    }
}
