//! `ebq bench pervent`: Brendan Gregg's per-event cost study.
//!
//! Workload: `dd if=/dev/zero of=/dev/null bs=1 count=N` pinned to one CPU,
//! i.e. N read(2) calls (plus a handful at start-up). Each experiment's tracer
//! runs system-wide on the other CPU; per-event cost is
//! `(T_traced − T_control) / N` with T the fastest of R runs of dd's CPU time
//! (user + system; the BPF programs run inside dd's syscalls) — the elapsed
//! time is recorded too. The control runs first and last; the fastest counts.

use super::proc::{fastest_clean, start_all, Stopped, Timed, Tracer};
use super::reference::References;
use super::{plot, table, Ctx};
use serde_json::{json, Value};
use std::path::Path;

/// One experiment of the study.
struct Exp {
    id: &'static str,
    title: &'static str,
    /// ebq queries (several run as separate ebq processes at once).
    ebq: &'static [&'static str],
    /// Extra ebq options.
    ebq_opts: &'static [&'static str],
    /// The bpftrace program (`LIBC` is replaced by libc's path).
    bpftrace: &'static str,
    /// The reference program in bench/reference/ (without .bpf.c).
    reference: Option<&'static str>,
    /// Tracepoint programs each read runs (for "added cost over the bare
    /// trigger"); 0 for other probe kinds.
    probes: u32,
    /// dd runs count / this many reads (uprobes cost ~20× a tracepoint: fewer
    /// reads keep the study short; the control is measured at the same count).
    divisor: u64,
    /// dd reads a page-cached ext4/tmpfs file in the scratch directory instead
    /// of /dev/zero: file columns then describe a real file system's file (the
    /// control reads the same file).
    file: bool,
}

const EXPS: &[Exp] = &[
    Exp {
        id: "trigger",
        title: "bare trigger (empty program)",
        ebq: &["SELECT pid FROM syscalls.sys_enter_read"],
        ebq_opts: &["--bench-stage", "trigger"],
        bpftrace: "t:syscalls:sys_enter_read { }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "tp_entry",
        title: "tracepoint entry, count",
        ebq: &["SELECT COUNT(*) FROM syscalls.sys_enter_read"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @ = count(); }",
        reference: Some("count"),
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "tp_return",
        title: "tracepoint return, count",
        ebq: &["SELECT COUNT(*) FROM syscalls.sys_exit_read"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_exit_read { @ = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "uprobe",
        title: "uprobe libc read, count",
        ebq: &["SELECT COUNT(*) FROM uprobe:libc:read"],
        ebq_opts: &[],
        bpftrace: "uprobe:LIBC:read { @ = count(); }",
        reference: None,
        probes: 0,
        divisor: 10,
        file: false,
    },
    Exp {
        id: "uretprobe",
        title: "uretprobe libc read, count",
        ebq: &["SELECT COUNT(*) FROM uretprobe:libc:read"],
        ebq_opts: &[],
        bpftrace: "uretprobe:LIBC:read { @ = count(); }",
        reference: None,
        probes: 0,
        divisor: 10,
        file: false,
    },
    Exp {
        id: "filter",
        title: "filter comm = 'dd', count",
        ebq: &["SELECT COUNT(*) FROM syscalls.sys_enter_read WHERE comm = 'dd'"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read /comm == \"dd\"/ { @ = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "key_pid",
        title: "count by pid",
        ebq: &["SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @[pid] = count(); }",
        reference: Some("key_pid"),
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "key_comm",
        title: "count by comm",
        ebq: &["SELECT comm, COUNT(*) FROM syscalls.sys_enter_read GROUP BY comm"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @[comm] = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "two_keys",
        title: "count by pid, comm",
        ebq: &["SELECT pid, comm, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid, comm"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @[pid, comm] = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "hist",
        title: "log2 histogram of count",
        ebq: &["SELECT HIST(count) FROM syscalls.sys_enter_read"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @ = hist(args->count); }",
        reference: Some("hist"),
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "timing",
        title: "latency enter→exit (JOIN), histogram",
        ebq: &["SELECT HIST(x.time - e.time) FROM syscalls.sys_enter_read e \
                JOIN syscalls.sys_exit_read x ON e.tid = x.tid"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @s[tid] = nsecs; } \
                   t:syscalls:sys_exit_read /@s[tid]/ { @ = hist(nsecs - @s[tid]); delete(@s[tid]); }",
        reference: Some("timing"),
        probes: 2,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "multiple",
        title: "multiple: count by pid at entry + histogram of ret at exit",
        ebq: &[
            "SELECT pid, COUNT(*) FROM syscalls.sys_enter_read GROUP BY pid",
            "SELECT HIST(ret) FROM syscalls.sys_exit_read",
        ],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @c[pid] = count(); } t:syscalls:sys_exit_read { @h = hist(args->ret); }",
        reference: None,
        probes: 2,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "per_event",
        title: "per-event output (rows to a file)",
        ebq: &["SELECT time, pid, count FROM syscalls.sys_enter_read WHERE comm = 'dd'"],
        ebq_opts: &["--format", "csv"],
        bpftrace: "t:syscalls:sys_enter_read /comm == \"dd\"/ { printf(\"%llu %d %d\\n\", nsecs, pid, args->count); }",
        reference: Some("per_event"),
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "file_inode",
        title: "count by inode (file column)",
        ebq: &["SELECT inode, COUNT(*) FROM syscalls.sys_enter_read GROUP BY inode"],
        ebq_opts: &[],
        // bpftrace 0.17 indexes arrays by literals only: the fd slot by pointer arithmetic.
        bpftrace: "t:syscalls:sys_enter_read { @[(*(curtask->files->fdt->fd + args->fd))->f_inode->i_ino] = count(); }",
        reference: Some("file_inode"),
        probes: 1,
        divisor: 1,
        file: true,
    },
    Exp {
        id: "file_fs_name",
        title: "count by fs_type, file_name (file columns)",
        ebq: &["SELECT fs_type, file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY fs_type, file_name"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { $f = *(curtask->files->fdt->fd + args->fd); \
                   @[str($f->f_inode->i_sb->s_type->name), str($f->f_path.dentry->d_name.name)] = count(); }",
        reference: Some("file_fs_name"),
        probes: 1,
        divisor: 1,
        file: true,
    },
    Exp {
        id: "kprobe",
        title: "kprobe vfs_read, count",
        ebq: &["SELECT COUNT(*) FROM kprobe:vfs_read"],
        ebq_opts: &[],
        bpftrace: "k:vfs_read { @ = count(); }",
        reference: None,
        probes: 0,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "kretprobe",
        title: "kretprobe vfs_read, count",
        ebq: &["SELECT COUNT(*) FROM kretprobe:vfs_read"],
        ebq_opts: &[],
        bpftrace: "kr:vfs_read { @ = count(); }",
        reference: None,
        probes: 0,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "fentry",
        title: "fentry vfs_read, count",
        ebq: &["SELECT COUNT(*) FROM fentry:vfs_read"],
        ebq_opts: &[],
        bpftrace: "kfunc:vfs_read { @ = count(); }",
        reference: None,
        probes: 0,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "kstack",
        title: "count by kernel stack",
        ebq: &["SELECT kstack, COUNT(*) FROM syscalls.sys_enter_read GROUP BY kstack"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @[kstack] = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
    Exp {
        id: "ustack",
        title: "count by user stack",
        ebq: &["SELECT ustack, COUNT(*) FROM syscalls.sys_enter_read GROUP BY ustack"],
        ebq_opts: &[],
        bpftrace: "t:syscalls:sys_enter_read { @[ustack] = count(); }",
        reference: None,
        probes: 1,
        divisor: 1,
        file: false,
    },
];

/// The experiments over system-call tracepoints: (id, title, ebq queries, ebq options).
pub(crate) fn syscall_shapes(
) -> impl Iterator<Item = (&'static str, &'static str, &'static [&'static str], &'static [&'static str])> {
    EXPS.iter().filter(|e| e.probes > 0 && !e.file).map(|e| (e.id, e.title, e.ebq, e.ebq_opts))
}

/// The quick run keeps one experiment of each kind of machinery.
const QUICK: &[&str] = &["trigger", "tp_entry", "key_pid", "hist", "timing", "per_event", "kprobe"];

fn libc_path() -> String {
    ["/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("/lib/x86_64-linux-gnu/libc.so.6")
        .to_string()
}

/// Runs one tool's tracer(s), measures dd under it, stops it.
pub(crate) fn measure(ctx: &Ctx, dd: &[String], name: &str, argvs: &[Vec<String>], ready: &str) -> Value {
    let events = dd.iter().find_map(|a| a.strip_prefix("count=")).and_then(|n| n.parse().ok()).unwrap_or(1);
    let tracers = match start_all(&ctx.scratch, name, ctx.tracer_cpu, argvs, ready) {
        Ok(t) => t,
        Err(e) => return json!({ "unsupported": e }),
    };
    let startup = tracers.iter().map(|t| t.startup.as_secs_f64()).fold(0.0, f64::max);
    let own: Vec<u32> = tracers.iter().map(Tracer::pid).collect();
    let timed = fastest_clean(ctx.cpu, dd, ctx.runs, &own);
    let in_bpf = super::inbpf::ns_per_event(ctx.cpu, dd, &own, events);
    let stopped: Vec<Result<Stopped, String>> = tracers.into_iter().map(Tracer::stop).collect();
    let files: Vec<_> = std::fs::read_dir(&ctx.scratch).into_iter().flatten().flatten().collect();
    for f in files {
        if f.file_name().to_string_lossy().starts_with(&format!("{name}.")) {
            let _ = std::fs::remove_file(f.path());
        }
    }
    let (t, contaminated) = match timed {
        Ok(t) => t,
        Err(e) => return json!({ "error": e }),
    };
    let mut v = json!({
        "cpu_s": t.cpu_ns as f64 / 1e9,
        "elapsed_s": t.elapsed_ns as f64 / 1e9,
        "startup_s": startup,
        "runs_with_foreign_probes": contaminated,
    });
    let mut notes = vec![];
    match in_bpf {
        Ok(Some(ns)) => {
            v["bpf_ns"] = json!(ns.per_run);
            v["bpf_ns_per_read"] = json!(ns.per_event);
        }
        Ok(None) => {}
        Err(e) => notes.push(format!("in-BPF time not measured: {e}")),
    }
    for s in stopped {
        match s {
            Ok(s) => {
                let text = format!("{}\n{}", s.stderr, s.stdout);
                if let Some(l) = text.lines().find(|l| l.starts_with("ebq:") && l.contains("events seen")) {
                    notes.push(l.trim_start_matches("ebq: ").to_string());
                }
                if let Some(l) = text.lines().find(|l| l.contains("Lost") && l.contains("events")) {
                    notes.push(l.trim().to_string());
                }
                if let Some(l) = text.lines().find(|l| l.starts_with("rows delivered") || l.starts_with("map dropped"))
                {
                    notes.push(l.to_string());
                }
            }
            Err(e) => notes.push(e),
        }
    }
    v["notes"] = json!(notes.join("; "));
    v
}

/// For the tracepoint experiments: each tool's `cost` minus the bare trigger's
/// (ebq's empty program, per probe) as `{prefix}ns`, and ebq's added cost over
/// bpftrace's and the reference's as `{prefix}ebq_over_bpftrace` /
/// `{prefix}ebq_over_reference` (none where theirs is not above the trigger).
fn add_over_trigger(exps: &mut [Value], cost: &str, prefix: &str) {
    let Some(trig) = exps.iter().find(|x| x["id"] == "trigger").and_then(|x| x["ebq"][cost].as_f64()) else {
        return;
    };
    let added_key = format!("{prefix}ns");
    for x in exps.iter_mut().filter(|x| x["probes"].as_u64().unwrap_or(0) > 0 && x["id"] != "trigger") {
        let floor = trig * x["probes"].as_f64().unwrap_or(1.0);
        for tool in ["ebq", "bpftrace", "reference"] {
            if let Some(ns) = x[tool][cost].as_f64() {
                x[tool][&added_key] = json!(ns - floor);
            }
        }
        let added = |t: &str| x[t][&added_key].as_f64();
        let ratios: Vec<(String, f64)> = ["bpftrace", "reference"]
            .into_iter()
            .filter_map(|other| {
                Some((format!("{prefix}ebq_over_{other}"), added("ebq")? / added(other).filter(|&o| o > 0.0)?))
            })
            .collect();
        for (key, r) in ratios {
            x[key.as_str()] = json!(r);
        }
    }
}

pub(crate) fn per_event(count: u64, control: Timed, tool: &mut Value) {
    let (Some(cpu), Some(el)) = (tool["cpu_s"].as_f64(), tool["elapsed_s"].as_f64()) else { return };
    let n = count as f64;
    tool["ns"] = json!((cpu * 1e9 - control.cpu_ns as f64) / n);
    tool["ns_elapsed"] = json!((el * 1e9 - control.elapsed_ns as f64) / n);
}

pub(crate) fn dd_argv(count: u64) -> Vec<String> {
    dd_argv_from(count, "/dev/zero")
}

/// dd reading `count` single bytes from `input`.
fn dd_argv_from(count: u64, input: &str) -> Vec<String> {
    ["dd", &format!("if={input}"), "of=/dev/null", "bs=1", &format!("count={count}"), "status=none"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// The file the file-column experiments read: `count` bytes in the scratch
/// directory (the results directory's file system), read once so dd finds it
/// in the page cache.
fn input_file(ctx: &Ctx, count: u64) -> Result<String, String> {
    let path = ctx.scratch.join("pervent-input");
    let bytes = usize::try_from(count).map_err(|e| e.to_string())?;
    std::fs::write(&path, vec![b'x'; bytes]).map_err(|e| format!("{}: {e}", path.display()))?;
    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}

pub(crate) fn min_timed(a: Timed, b: Timed) -> Timed {
    Timed { cpu_ns: a.cpu_ns.min(b.cpu_ns), elapsed_ns: a.elapsed_ns.min(b.elapsed_ns) }
}

/// Runs the study; returns its results section.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let refs = References::build(ctx)?;
    let libc = libc_path();
    let selected = selected(ctx)?;
    let input = if selected.iter().any(|e| e.file) { Some(input_file(ctx, ctx.count)?) } else { None };
    let dd_of = |n: u64, file: bool| match (&input, file) {
        (Some(path), true) => dd_argv_from(n, path),
        _ => dd_argv(n),
    };
    let mut counts: Vec<(u64, bool)> = selected.iter().map(|e| ((ctx.count / e.divisor).max(1), e.file)).collect();
    counts.sort_unstable();
    counts.dedup();
    // Controls first and last: the fastest of both counts, so drift cannot favour tracing.
    let mut controls = vec![];
    for &(n, file) in &counts {
        controls.push(((n, file), fastest_clean(ctx.cpu, &dd_of(n, file), ctx.runs, &[])?.0));
    }
    let mut rows = vec![];
    for e in selected {
        let n = (ctx.count / e.divisor).max(1);
        let dd = dd_of(n, e.file);
        eprintln!("ebq bench pervent: {} ({}), {n} reads", e.id, e.title);
        let (ebq, bt, bt_prog, reference) = measure_tools(ctx, e, &dd, &refs, &libc);
        rows.push((e, n, ebq, bt, bt_prog, reference));
    }
    for ((n, file), c) in controls.iter_mut() {
        *c = min_timed(*c, fastest_clean(ctx.cpu, &dd_of(*n, *file), ctx.runs, &[])?.0);
    }
    let control_of =
        |n: u64, file: bool| controls.iter().find(|(m, _)| *m == (n, file)).map(|(_, c)| *c).expect("measured");
    let mut exps = vec![];
    let mut trigger_ns = None;
    for (e, n, mut ebq, mut bt, bt_prog, mut reference) in rows {
        for t in [&mut ebq, &mut bt, &mut reference] {
            per_event(n, control_of(n, e.file), t);
        }
        if e.id == "trigger" {
            trigger_ns = ebq["ns"].as_f64();
        }
        exps.push(experiment_json(e, n, (ebq, bt, reference), bt_prog));
    }
    // Added cost over the bare trigger, by dd's CPU time and in BPF. In BPF the
    // empty program's time per run is the statistics' own clock reads and the
    // call into the program, the same for every tool (bpftrace's empty program
    // measures the same); what a program adds is the rest.
    add_over_trigger(&mut exps, "ns", "added_");
    add_over_trigger(&mut exps, "bpf_ns", "bpf_added_");
    let trigger_bpf = exps.iter().find(|x| x["id"] == "trigger").and_then(|x| x["ebq"]["bpf_ns"].as_f64());
    let control = control_of(ctx.count, false);
    let section = json!({
        "workload": format!("dd if=/dev/zero of=/dev/null bs=1 count={} (uprobes: count/10; file_*: if=a page-cached file in the scratch directory) on CPU {}; tracers on CPU {}", ctx.count, ctx.cpu, ctx.tracer_cpu),
        "count": ctx.count,
        "runs": ctx.runs,
        "control": { "cpu_s": control.cpu_ns as f64 / 1e9, "elapsed_s": control.elapsed_ns as f64 / 1e9 },
        "trigger_ns": trigger_ns,
        "trigger_bpf_ns": trigger_bpf,
        "experiments": exps,
    });
    print!("{}", text_table(&section));
    plot_section(&ctx.out, &section)?;
    Ok(section)
}

/// The experiments `--only` (with the trigger), or `--quick`, selects; every
/// one by default.
fn selected(ctx: &Ctx) -> Result<Vec<&'static Exp>, String> {
    let wanted = |e: &Exp| match ctx.only.is_empty() {
        true => !ctx.quick || QUICK.contains(&e.id),
        false => e.id == "trigger" || ctx.only.iter().any(|o| o == e.id),
    };
    let unknown: Vec<&String> = ctx.only.iter().filter(|o| !EXPS.iter().any(|e| e.id == o.as_str())).collect();
    if !unknown.is_empty() {
        let ids: Vec<&str> = EXPS.iter().map(|e| e.id).collect();
        return Err(format!("--only: no experiment {unknown:?} (there are {})", ids.join(", ")));
    }
    Ok(EXPS.iter().filter(|e| wanted(e)).collect())
}

/// One experiment's runs of dd (`dd`) under ebq, bpftrace and the
/// reference program (`Null` without one); with the bpftrace program run.
fn measure_tools(ctx: &Ctx, e: &Exp, dd: &[String], refs: &References, libc: &str) -> (Value, Value, String, Value) {
    let ebq_argvs: Vec<Vec<String>> = e
        .ebq
        .iter()
        .map(|q| {
            let mut a = ctx.ebq_argv(&[q]);
            a.extend(e.ebq_opts.iter().map(|s| s.to_string()));
            a
        })
        .collect();
    let ebq = measure(ctx, dd, &format!("{}-ebq", e.id), &ebq_argvs, "ebq: tracing");
    let bt_prog = e.bpftrace.replace("LIBC", libc);
    let bt_argv = vec![ctx.bpftrace.clone(), "-e".into(), bt_prog.clone()];
    let bt = measure(ctx, dd, &format!("{}-bpftrace", e.id), &[bt_argv], "Attaching");
    let reference = match e.reference {
        Some(r) => {
            let sink = ctx.scratch.join(format!("{}-reference.rows", e.id));
            let v = measure(ctx, dd, &format!("{}-reference", e.id), &[refs.argv(r, &sink)], "attached");
            let _ = std::fs::remove_file(&sink);
            v
        }
        None => Value::Null,
    };
    (ebq, bt, bt_prog, reference)
}

/// One experiment's entry of the results: what ran, each tool's cost per
/// event, and ebq's over bpftrace's and the reference's.
fn experiment_json(e: &Exp, n: u64, (ebq, bt, reference): (Value, Value, Value), bt_prog: String) -> Value {
    let ratio = |a: &Value, b: &Value| match (a["ns"].as_f64(), b["ns"].as_f64()) {
        (Some(x), Some(y)) if y > 0.0 => json!(x / y),
        _ => Value::Null,
    };
    json!({
        "id": e.id,
        "title": e.title,
        "reads": n,
        "probes": e.probes,
        "ebq_query": e.ebq.join(" ; "),
        "ebq_options": e.ebq_opts.join(" "),
        "bpftrace_program": bt_prog,
        "reference_program": e.reference.map(|r| format!("bench/reference/{r}.bpf.c")),
        "ebq_over_bpftrace": ratio(&ebq, &bt),
        "ebq_over_reference": ratio(&ebq, &reference),
        "ebq": ebq,
        "bpftrace": bt,
        "reference": reference,
    })
}

/// Rows of the per-event table (used by the terminal and the Markdown report).
pub fn table_rows(section: &Value) -> Vec<Vec<String>> {
    let cell = |t: &Value| match (t["ns"].as_f64(), t["unsupported"].as_str(), t["error"].as_str()) {
        (Some(ns), _, _) => format!("{ns:.1}"),
        (None, Some(_), _) => "unsupported".into(),
        (None, None, Some(_)) => "error".into(),
        _ => "—".into(),
    };
    section["experiments"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| {
            vec![
                x["id"].as_str().unwrap_or("").to_string(),
                cell(&x["ebq"]),
                cell(&x["bpftrace"]),
                cell(&x["reference"]),
                table::num(x["ebq_over_bpftrace"].as_f64(), 2),
                table::num(x["ebq_over_reference"].as_f64(), 2),
                table::num(x["added_ebq_over_bpftrace"].as_f64(), 2),
                table::num(x["added_ebq_over_reference"].as_f64(), 2),
                ["ebq", "bpftrace", "reference"].map(|t| table::num(x[t]["bpf_ns"].as_f64(), 1)).join(" / "),
                table::num(x["bpf_added_ebq_over_bpftrace"].as_f64(), 2),
                table::num(x["bpf_added_ebq_over_reference"].as_f64(), 2),
            ]
        })
        .collect()
}

/// Header of [`table_rows`].
pub const HEADER: &[&str] = &[
    "experiment",
    "ebq ns/event",
    "bpftrace ns/event",
    "reference ns/event",
    "ebq/bpftrace",
    "ebq/reference",
    "added: ebq/bpftrace",
    "added: ebq/reference",
    "in-BPF ns: ebq / bpftrace / reference",
    "in-BPF added: ebq/bpftrace",
    "in-BPF added: ebq/reference",
];

fn text_table(section: &Value) -> String {
    format!(
        "\nper-event cost: {}\n{}",
        section["workload"].as_str().unwrap_or(""),
        table::text(HEADER, &table_rows(section))
    )
}

/// Draws the per-event plot into `out` (also from a saved results.json).
pub(crate) fn plot_section(out: &Path, section: &Value) -> Result<(), String> {
    let exps: Vec<&Value> = section["experiments"].as_array().into_iter().flatten().collect();
    let cats: Vec<String> = exps.iter().map(|x| x["id"].as_str().unwrap_or("").to_string()).collect();
    let series: Vec<plot::Series> = ["ebq", "bpftrace", "reference"]
        .iter()
        .map(|t| plot::Series {
            name: t.to_string(),
            bars: exps.iter().map(|x| x[*t]["ns"].as_f64().map(plot::Bar::plain)).collect(),
        })
        .collect();
    plot::bars(&out.join("pervent.svg"), "Per-event cost (dd bs=1, control subtracted)", "ns per read", &cats, &series)
}
