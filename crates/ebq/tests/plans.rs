//! Printed plans, one file per query shape: `tests/plans/NAME.sql` is planned
//! against the fixture kernel (no root, no host) and what EXPLAIN says of it
//! (the kernel/user split), with each generated object's programs and maps,
//! must equal `tests/plans/NAME.plan`, as DataFusion's sqllogictest files
//! pin its plans. The generated C is left out: `tests/snapshots` and the
//! codegen tests pin it, and a plan should not change when a comment does.
//!
//! A `.sql` file opens with `--` comments: what shape it covers, and
//! optionally `-- options: WORD ...` (see [`options`]) and `-- kernel: typed`
//! (plan for [`FixtureKernel::typed`], a 6.2+ kernel with `bpf_rdonly_cast`:
//! typed file loads, late names, `pages_mapped`). After an intended
//! change, `EBQ_BLESS=1 cargo test --release --workspace --test plans`
//! rewrites the `.plan` files (and writes those of new cases); review them
//! with `git diff`.

use ebq::codegen::{AttachPoint, Layout, Program};
use ebq::host::FixtureKernel;
use ebq::plan::{PlanOptions, RowFold, SyscallAttach};
use ebq::Engine;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[test]
fn printed_plans_match_their_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plans");
    let bless = ["EBQ_BLESS", "EBQ_UPDATE_SNAPSHOTS"].iter().any(|v| std::env::var_os(v).is_some());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/plans")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
        .collect();
    cases.sort();
    let mut failed = vec![];
    for sql_path in &cases {
        let sql = std::fs::read_to_string(sql_path).expect("readable .sql");
        let got = match printed(&sql) {
            Ok(got) => got,
            Err(e) => {
                failed.push(format!("{}: {e}", sql_path.display()));
                continue;
            }
        };
        let want_path = sql_path.with_extension("plan");
        if bless {
            std::fs::write(&want_path, &got).expect("writable .plan");
            continue;
        }
        let want = std::fs::read_to_string(&want_path).unwrap_or_default();
        if got != want {
            failed.push(format!("--- {}\n+++ planned now\n{}", want_path.display(), diff(&want, &got)));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} plans changed (review, then rerun with EBQ_BLESS=1):\n\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
    assert!(cases.len() >= 60, "{} cases: the plan shapes need at least 60", cases.len());
}

/// The plan of a case file, as its `.plan` file holds it.
fn printed(file: &str) -> Result<String, String> {
    let sql = file.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
    let sql = sql.trim();
    let kernel = match file.lines().any(|l| l.trim() == "-- kernel: typed") {
        true => FixtureKernel::typed(),
        false => FixtureKernel::checked_in(),
    };
    let engine = Engine::with_kernel(kernel).with_options(options(file)?);
    let prepared = engine.prepare(sql).map_err(|e| e.render(sql))?;
    let mut out = format!("Plan:\n{}", indent(&prepared.physical.explain()));
    for (i, p) in prepared.programs.iter().enumerate() {
        let _ = write!(out, "\nObject {}:\n{}", i + 1, indent(&object(p)));
    }
    Ok(out)
}

/// The plan options a case asks for on `-- options:` lines:
/// `attach=auto|raw|classic`, `rings=shared`, `pairs=hash`, `late_names=off`,
/// `max_groups=N`, and `fold` (rows handed to a kernel fold, [`test_fold`]).
fn options(file: &str) -> Result<PlanOptions, String> {
    let mut o = PlanOptions::default();
    let words = file.lines().filter_map(|l| l.trim().strip_prefix("-- options:")).flat_map(str::split_whitespace);
    for word in words {
        match word.split_once('=').unwrap_or((word, "")) {
            ("attach", "auto") => o.attach = SyscallAttach::Auto,
            ("attach", "raw") => o.attach = SyscallAttach::Raw,
            ("attach", "classic") => o.attach = SyscallAttach::Classic,
            ("rings", "shared") => o.per_cpu_rings = false,
            ("pairs", "hash") => o.thread_pairs = false,
            ("late_names", "off") => o.late_names = false,
            ("max_groups", n) => o.max_groups = n.parse().map_err(|_| format!("max_groups={n}"))?,
            ("fold", "") => o.row_fold = Some(test_fold()),
            _ => return Err(format!("unknown option `{word}`")),
        }
    }
    Ok(o)
}

/// A kernel fold that counts rows per pid: the engine's side of the
/// contract (`plan::row_fold`) is what the cases show, not the fold's C.
fn test_fold() -> Arc<RowFold> {
    let source = "struct {\n\t__uint(type, BPF_MAP_TYPE_HASH);\n\t__uint(max_entries, 1024);\n\
                  \t__type(key, __u32);\n\t__type(value, __u64);\n} rows_by_pid SEC(\".maps\");\n\n\
                  static __always_inline int ebq_fold(struct ebq_row *r)\n{\n\t__u32 pid = r->EBQ_ROW_pid;\n\
                  \t__u64 one = 1, *n = bpf_map_lookup_elem(&rows_by_pid, &pid);\n\n\tif (n)\n\
                  \t\t__sync_fetch_and_add(n, 1);\n\telse if (bpf_map_update_elem(&rows_by_pid, &pid, &one, BPF_NOEXIST))\n\
                  \t\treturn 1;\n\treturn 0;\n}\n";
    Arc::new(RowFold { name: "rows per pid".into(), source: source.into(), maps: vec!["rows_by_pid".into()] })
}

/// One generated object: its programs in attach order, then its maps with
/// their kind and size from the C and their role and layouts from the
/// codegen → runtime contract.
fn object(p: &Program) -> String {
    let mut s = "programs:\n".to_string();
    for prog in &p.progs {
        let when = match prog.attach {
            AttachPoint::Query(_) => "query",
            AttachPoint::PairStart(_) => "pair start",
            AttachPoint::ProcessTracking(_) => "-c process tracking",
            AttachPoint::FaultCount(_) => "fault count",
        };
        let _ = writeln!(s, "  {:<26} {} ({when})", prog.name, prog.attach.describe());
    }
    s.push_str("maps:\n");
    let declared = declared_maps(&p.source);
    for (name, _, _) in &declared {
        assert!(p.maps.iter().any(|m| m.name == name.as_str()), "{name} is declared but not in the contract");
    }
    for m in &p.maps {
        let (kind, max) = match declared.iter().find(|d| d.0 == m.name) {
            Some((_, kind, max)) => (kind.as_str(), max.map_or(String::new(), |n| format!(" max {n}"))),
            None => ("data section", String::new()),
        };
        let (key, value) = (layout(&m.key), layout(&m.value));
        let _ = writeln!(s, "  {:<22} {kind}{max}, {:?}, key {key}, value {value}", m.name, m.role);
    }
    s
}

fn layout(l: &Layout) -> String {
    match l {
        Layout::None => "none".into(),
        Layout::U8 => "__u8".into(),
        Layout::U32 => "__u32".into(),
        Layout::U64 => "__u64".into(),
        Layout::Frames(n) => format!("__u64[{n}]"),
        Layout::Struct(s) => format!("{} B", s.size),
        Layout::Bytes(n) => format!("{n} B"),
        Layout::Stats => "struct ebq_stats".into(),
        Layout::Config => "struct ebq_config".into(),
    }
}

/// (name, BPF_MAP_TYPE_ without the prefix, max_entries) of each map the C declares.
fn declared_maps(c: &str) -> Vec<(String, String, Option<u64>)> {
    let (mut out, mut kind, mut max) = (vec![], String::new(), None);
    for line in c.lines().map(str::trim) {
        if let Some(t) = line.strip_prefix("__uint(type, BPF_MAP_TYPE_") {
            kind = t.trim_end_matches(");").to_string();
        } else if let Some(n) = line.strip_prefix("__uint(max_entries, ") {
            max = n.split(')').next().and_then(|n| n.trim().parse().ok());
        } else if let Some(name) = line.strip_prefix("} ").and_then(|l| l.strip_suffix(" SEC(\".maps\");")) {
            out.push((name.to_string(), std::mem::take(&mut kind), max.take()));
        }
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// A line diff of `want` → `got` (longest common subsequence): ` ` kept, `-` gone, `+` new.
fn diff(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            let _ = writeln!(out, "  {}", a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {}", a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {}", b[j]);
            j += 1;
        }
    }
    out
}
