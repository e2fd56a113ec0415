//! `--html FILE`: the report as one self-contained page (inline CSS, inline
//! SVG charts, a few lines of inline script to sort tables; nothing fetched
//! from the network), with the sections of PyDarshan's job summary: job
//! summary, I/O cost, per-file-system and per-file tables, read and write
//! access-size histograms, common access sizes, sequential/consecutive
//! shares, operation counts, data by mount point, and a heatmap of bytes
//! over time per file; then the MPI-IO table (job and per-rank rows, when
//! MPI-IO was probed and seen) and the event accounting of every query, so
//! a page over lost events says so.
//!
//! Every section is a `<section class="ebq-section" id=…>`; the script marks
//! `<body data-sections=N>` after it ran, so a headless browser's DOM shows
//! the page rendered and scripted without errors.

use super::mpi;
use super::posix::{Fold, Record, BUCKETS};
use super::terminal::{busiest, in_posix, lost, missed_by_darshan, not_listed_lines, path_bytes, path_totals, Job};
use super::{OpKind, Operation};
use std::fmt::Write as _;

/// Files shown in the heatmap (busiest first).
const HEATMAP_FILES: usize = 20;
/// Time bins of the heatmap.
const HEATMAP_BINS: usize = 60;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn secs(ns: i64) -> String {
    format!("{:.6}", ns as f64 / 1e9)
}

/// Everything on the job summed over file systems.
fn total(fold: &Fold) -> Option<Record> {
    let mut it = fold.filesystems.values();
    let mut t = it.next()?.clone();
    for r in it {
        for (k, v) in &r.counters {
            *t.counters.entry(k.clone()).or_insert(0) += v;
        }
        for (k, v) in &r.fcounters {
            *t.fcounters.get_mut(k).unwrap() += v;
        }
        t.files += r.files;
    }
    Some(t)
}

/// A horizontal bar chart: (label, value) rows.
fn bars(out: &mut String, title: &str, rows: &[(String, f64)], unit: &str) {
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max).max(1e-12);
    let h = 22 * rows.len() + 30;
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption><svg class=\"chart\" width=\"640\" height=\"{h}\" role=\"img\">",
        esc(title)
    );
    for (i, (label, v)) in rows.iter().enumerate() {
        let y = 10 + 22 * i;
        let w = (v / max * 380.0).round();
        let _ = write!(
            out,
            "<text x=\"150\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"160\" y=\"{y}\" width=\"{w}\" height=\"16\" fill=\"#3b76b0\"/><text x=\"{}\" y=\"{}\">{}{}</text>",
            y + 13,
            esc(label),
            165.0 + w,
            y + 13,
            fmt_num(*v),
            unit
        );
    }
    out.push_str("</svg></figure>");
}

/// Integers as they are, shares with one decimal, seconds with six.
fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.6}")
    }
}

fn table(out: &mut String, id: &str, head: &[&str], rows: &[Vec<String>]) {
    let _ = write!(out, "<table class=\"sortable\" id=\"{id}-table\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
}

fn section(out: &mut String, id: &str, title: &str, body: &str) {
    let _ = write!(out, "<section class=\"ebq-section\" id=\"{id}\"><h2>{}</h2>{body}</section>", esc(title));
}

fn record_row(name: &str, r: &Record) -> Vec<String> {
    vec![
        name.to_string(),
        r.fs_type.clone(),
        r.mount_point.clone(),
        r.get("POSIX_OPENS").to_string(),
        r.get("POSIX_READS").to_string(),
        r.get("POSIX_WRITES").to_string(),
        r.get("POSIX_BYTES_READ").to_string(),
        r.get("POSIX_BYTES_WRITTEN").to_string(),
        secs(r.fcounters["POSIX_F_READ_TIME"]),
        secs(r.fcounters["POSIX_F_WRITE_TIME"]),
        secs(r.fcounters["POSIX_F_META_TIME"]),
        r.get("EBQ_ERRORS").to_string(),
    ]
}

const RECORD_HEAD: [&str; 12] = [
    "name",
    "fs",
    "mount point",
    "opens",
    "reads",
    "writes",
    "bytes read",
    "bytes written",
    "read s",
    "write s",
    "meta s",
    "errors",
];

/// The page: one section after the other, each made by its own function
/// below (the job's summary, I/O cost, per file system, path and file,
/// access sizes, sequential shares, operation counts, mounts, the heatmap,
/// MPI-IO, and the event accounting).
pub fn render(job: &Job, fold: &Fold, mpi: Option<&mpi::Fold>, ops: &[Operation]) -> String {
    let mut body = String::new();
    let t = total(fold);
    let get = |k: &str| t.as_ref().map_or(0, |t| t.get(k));
    let fget = |k: &str| t.as_ref().map_or(0, |t| t.fcounters[k]);
    let wall = job.wall_ns() as i64;
    section(&mut body, "summary", "Job summary", &summary(job, fold, &get, wall));
    section(&mut body, "io-cost", "I/O cost", &io_cost(&fget, wall));
    section(&mut body, "filesystems", "Per file system", &filesystems(fold));
    section(
        &mut body,
        "paths",
        "Per I/O path (system calls, io_uring, AIO; mmap: faults as reads, the bytes they mapped in); \
         POSIX_* counts system calls only, as Darshan's",
        &paths(fold),
    );
    section(&mut body, "missed", "What Darshan would miss (paths no POSIX_* counter sees)", &missed(fold));
    section(&mut body, "files", "Per file (busiest first; click a header to sort)", &files(fold));
    section(&mut body, "access-sizes", "Access-size histograms", &access_sizes(&get));
    section(&mut body, "common-sizes", "Common access sizes", &common_sizes(fold));
    section(&mut body, "sequential", "Sequential and consecutive accesses", &sequential(&get));
    section(&mut body, "operations", "Operation counts", &operations(&get));
    section(&mut body, "mounts", "Data by mount point", &mounts(fold));
    let mut s = String::new();
    heatmap(&mut s, fold, ops);
    section(&mut body, "heatmap", "Heatmap: bytes over time per file", &s);
    if let Some(m) = mpi.filter(|m| !m.files.is_empty()) {
        let mut s = String::new();
        mpi_table(&mut s, m);
        section(&mut body, "mpiio", "MPI-IO per file and rank (Darshan's MPIIO counters)", &s);
    }
    section(&mut body, "accounting", "Event accounting (what the kernel saw and lost)", &accounting(job));
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ebq I/O report</title><style>{CSS}</style></head><body><h1>ebq I/O report</h1>{body}<script>{SCRIPT}</script></body></html>\n"
    )
}

/// The job's totals: wall time, operations, files, file systems, bytes, errors.
fn summary(job: &Job, fold: &Fold, get: &dyn Fn(&str) -> i64, wall: i64) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<dl><dt>wall time (the command's)</dt><dd>{} s</dd><dt>operations</dt><dd>{}</dd><dt>files</dt><dd>{}</dd><dt>file systems</dt><dd>{}</dd><dt>bytes read</dt><dd>{}</dd><dt>bytes written</dt><dd>{}</dd><dt>errors</dt><dd>{}</dd></dl>",
        secs(wall),
        job.operations,
        fold.files.len(),
        fold.filesystems.len(),
        get("POSIX_BYTES_READ"),
        get("POSIX_BYTES_WRITTEN"),
        get("EBQ_ERRORS")
    );
    for line in not_listed_lines(&job.not_listed) {
        let _ = write!(s, "<p>{}</p>", esc(&line));
    }
    s
}

/// Time in reads, writes and metadata beside the wall time.
fn io_cost(fget: &dyn Fn(&str) -> i64, wall: i64) -> String {
    let mut s = String::new();
    let cost = [
        ("read".to_string(), fget("POSIX_F_READ_TIME") as f64 / 1e9),
        ("write".to_string(), fget("POSIX_F_WRITE_TIME") as f64 / 1e9),
        ("metadata".to_string(), fget("POSIX_F_META_TIME") as f64 / 1e9),
        ("wall time".to_string(), wall as f64 / 1e9),
    ];
    bars(&mut s, "Time in I/O vs wall time (s; summed over files)", &cost, " s");
    s
}

/// A row per file system, its file count where a file's row has its name.
fn filesystems(fold: &Fold) -> String {
    let mut s = String::new();
    // A file system's row: its file count where a file's row has its name.
    let mut head = vec!["files"];
    head.extend(&RECORD_HEAD[1..]);
    let rows: Vec<Vec<String>> = fold
        .filesystems
        .values()
        .map(|r| {
            let mut row = record_row(&r.files.to_string(), r);
            row[0] = r.files.to_string();
            row
        })
        .collect();
    table(&mut s, "filesystems", &head, &rows);
    s
}

/// A row per I/O path (system calls, io_uring, AIO, mmap).
fn paths(fold: &Fold) -> String {
    let mut s = String::new();
    let mut rows: Vec<Vec<String>> = path_totals(fold)
        .into_iter()
        .map(|(via, n)| {
            let seen = if in_posix(via) { "yes" } else { "no" };
            std::iter::once(via.name().to_string()).chain(n.map(|v| v.to_string())).chain([seen.into()]).collect()
        })
        .collect();
    // Darshan's counters beside ebq's: they equal the syscall row.
    let t = total(fold);
    let get = |k: &str| t.as_ref().map_or(0, |t| t.get(k));
    let mut posix = vec!["POSIX_*".to_string()];
    posix
        .extend(["POSIX_READS", "POSIX_WRITES", "POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"].map(|k| get(k).to_string()));
    posix.extend([(get("POSIX_FSYNCS") + get("POSIX_FDSYNCS")).to_string(), "(Darshan's)".into()]);
    rows.push(posix);
    let head = ["path", "reads", "writes", "bytes read", "bytes written", "fsyncs", "in POSIX_*"];
    table(&mut s, "paths", &head, &rows);
    s
}

/// The paths Darshan's POSIX module does not see, with their bytes and
/// share of all the bytes moved (issue 37 item 6).
fn missed(fold: &Fold) -> String {
    let rows: Vec<Vec<String>> = missed_by_darshan(fold)
        .into_iter()
        .map(|(via, n, share)| {
            let [reads, writes, ..] = n;
            vec![
                via.name().to_string(),
                reads.to_string(),
                writes.to_string(),
                path_bytes(&n).to_string(),
                format!("{:.1} %", 100.0 * share),
            ]
        })
        .collect();
    if rows.is_empty() {
        return "<dl><dt>nothing</dt><dd>every byte was moved by a system call Darshan's POSIX module counts</dd></dl>"
            .into();
    }
    let mut s = String::new();
    table(&mut s, "missed", &["path", "reads (faults)", "writes", "bytes", "share of bytes"], &rows);
    s
}

/// A row per file, busiest first.
fn files(fold: &Fold) -> String {
    let mut s = String::new();
    let rows: Vec<Vec<String>> = busiest(fold).into_iter().map(|(_, r)| record_row(&r.name, r)).collect();
    table(&mut s, "files", &RECORD_HEAD, &rows);
    s
}

/// Darshan's read and write size buckets as bars.
fn access_sizes(get: &dyn Fn(&str) -> i64) -> String {
    let mut s = String::new();
    for (dir, title) in [("READ", "Read sizes (bytes returned)"), ("WRITE", "Write sizes (bytes returned)")] {
        let rows: Vec<(String, f64)> =
            BUCKETS.iter().map(|b| (b.replace('_', "-"), get(&format!("POSIX_SIZE_{dir}_{b}")) as f64)).collect();
        bars(&mut s, title, &rows, "");
    }
    s
}

/// Each file system's most common access sizes.
fn common_sizes(fold: &Fold) -> String {
    let mut s = String::new();
    let rows: Vec<Vec<String>> = fold
        .filesystems
        .values()
        .flat_map(|r| r.access.iter().map(move |(v, c)| vec![r.mount_point.clone(), v.to_string(), c.to_string()]))
        .collect();
    table(&mut s, "common-sizes", &["mount point", "access size (B)", "count"], &rows);
    s
}

/// The share of sequential and consecutive reads and writes.
fn sequential(get: &dyn Fn(&str) -> i64) -> String {
    let mut s = String::new();
    let share = |n: &str, d: &str| {
        let d = get(d);
        if d == 0 {
            0.0
        } else {
            100.0 * get(n) as f64 / d as f64
        }
    };
    let rows = [
        ("sequential reads".to_string(), share("POSIX_SEQ_READS", "POSIX_READS")),
        ("consecutive reads".to_string(), share("POSIX_CONSEC_READS", "POSIX_READS")),
        ("sequential writes".to_string(), share("POSIX_SEQ_WRITES", "POSIX_WRITES")),
        ("consecutive writes".to_string(), share("POSIX_CONSEC_WRITES", "POSIX_WRITES")),
    ];
    bars(&mut s, "Share of reads / writes (%)", &rows, " %");
    s
}

/// How many opens, reads, writes, seeks, syncs and errors.
fn operations(get: &dyn Fn(&str) -> i64) -> String {
    let mut s = String::new();
    let rows: Vec<(String, f64)> = [
        ("opens", "POSIX_OPENS"),
        ("reads", "POSIX_READS"),
        ("writes", "POSIX_WRITES"),
        ("seeks", "POSIX_SEEKS"),
        ("fsyncs", "POSIX_FSYNCS"),
        ("fdatasyncs", "POSIX_FDSYNCS"),
        ("errors", "EBQ_ERRORS"),
    ]
    .iter()
    .map(|(l, k)| (l.to_string(), get(k) as f64))
    .collect();
    bars(&mut s, "Operation counts", &rows, "");
    s
}

/// Bytes read and written per mount point.
fn mounts(fold: &Fold) -> String {
    let mut s = String::new();
    let rows: Vec<(String, f64)> =
        fold.filesystems.values().map(|r| (format!("{} ({})", r.mount_point, r.fs_type), r.bytes() as f64)).collect();
    bars(&mut s, "Bytes read + written by mount point", &rows, " B");
    s
}

/// What each query's programs saw and lost, and AIO's submitted and counted requests.
fn accounting(job: &Job) -> String {
    let mut s = String::from("<dl>");
    for (name, st) in &job.stats {
        let _ = write!(
            s,
            "<dt>{name}</dt><dd>{} events seen, {} matched, {} dropped, {} missed; JOIN: {} start events missed, {} pairs left open, {} superseded, {} pairs lost, {} evicted; {} fork/exit events missed, {} children untracked{}</dd>",
            st.seen,
            st.matched,
            st.dropped,
            st.missed,
            st.missed_starts,
            st.open_pairs,
            st.superseded,
            st.pending_full,
            st.evicted,
            st.missed_tracking,
            st.untracked,
            if lost(st) > 0 { " — <strong>events were lost: counters may be low</strong>" } else { "" }
        );
    }
    let _ = write!(
        s,
        "<dt>AIO</dt><dd>{} requests submitted (io_submit), {} counted{}</dd>",
        job.aio.submitted,
        job.aio.counted,
        job.aio.warning().map(|w| format!(" — <strong>{}</strong>", esc(&w))).unwrap_or_default()
    );
    s.push_str("</dl>");
    s
}

/// One row per file over the job, then one per rank.
fn mpi_table(out: &mut String, m: &mpi::Fold) {
    const HEAD: [&str; 16] = [
        "file",
        "rank",
        "indep opens",
        "coll opens",
        "indep reads",
        "coll reads",
        "split reads",
        "nb reads",
        "indep writes",
        "coll writes",
        "split writes",
        "nb writes",
        "syncs",
        "bytes read",
        "bytes written",
        "read/write/meta s",
    ];
    out.push_str("<table class=\"sortable\"><thead><tr>");
    for h in HEAD {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    let mut row = |name: &str, rank: String, r: &mpi::Record| {
        let _ = write!(out, "<tr><td>{}</td><td>{rank}</td>", esc(name));
        for k in [
            "MPIIO_INDEP_OPENS",
            "MPIIO_COLL_OPENS",
            "MPIIO_INDEP_READS",
            "MPIIO_COLL_READS",
            "MPIIO_SPLIT_READS",
            "MPIIO_NB_READS",
            "MPIIO_INDEP_WRITES",
            "MPIIO_COLL_WRITES",
            "MPIIO_SPLIT_WRITES",
            "MPIIO_NB_WRITES",
            "MPIIO_SYNCS",
            "MPIIO_BYTES_READ",
            "MPIIO_BYTES_WRITTEN",
        ] {
            let _ = write!(out, "<td>{}</td>", r.get(k));
        }
        let _ = write!(
            out,
            "<td>{} / {} / {}</td></tr>",
            secs(r.fcounters["MPIIO_F_READ_TIME"]),
            secs(r.fcounters["MPIIO_F_WRITE_TIME"]),
            secs(r.fcounters["MPIIO_F_META_TIME"])
        );
    };
    for (k, r) in &m.files {
        row(
            &r.name,
            format!(
                "all {} (fastest {}, slowest {})",
                r.ranks,
                r.get("MPIIO_FASTEST_RANK"),
                r.get("MPIIO_SLOWEST_RANK")
            ),
            r,
        );
        for ((_, rank), rr) in m.ranks.range((*k, 0)..=(*k, u32::MAX)) {
            row(&r.name, rank.to_string(), rr);
        }
    }
    out.push_str("</tbody></table>");
}

/// Bytes read + written per file (busiest first) in [`HEATMAP_BINS`] bins
/// from the first operation's start to the last one's end (not the
/// report's start: that includes ebq's own start-up before the command runs).
fn heatmap(out: &mut String, fold: &Fold, ops: &[Operation]) {
    let files: Vec<_> = busiest(fold).into_iter().take(HEATMAP_FILES).collect();
    let first = ops.iter().map(|o| o.start_ns).min().unwrap_or(0);
    let last = ops.iter().map(|o| o.end_ns).max().unwrap_or(0);
    let span = last.saturating_sub(first).max(1) as f64;
    let mut grid = vec![[0u64; HEATMAP_BINS]; files.len()];
    for o in ops.iter().filter(|o| matches!(o.op, OpKind::Read | OpKind::Write) && o.result > 0) {
        if let Some(i) = files.iter().position(|(k, _)| **k == o.file) {
            let at = (o.start_ns - first) as f64 / span;
            grid[i][((at * HEATMAP_BINS as f64) as usize).min(HEATMAP_BINS - 1)] += o.result as u64;
        }
    }
    let max = grid.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let (cell_w, cell_h, left) = (8, 18, 200);
    let _ = write!(
        out,
        "<figure><figcaption>first to last operation; each column is {} s; darker = more bytes (max {} B in a cell)</figcaption><svg class=\"chart\" width=\"{}\" height=\"{}\" role=\"img\">",
        secs((span / HEATMAP_BINS as f64) as i64),
        max as u64,
        left + cell_w * HEATMAP_BINS + 10,
        cell_h * files.len() + 10
    );
    for (i, (_, r)) in files.iter().enumerate() {
        let y = 5 + cell_h * i;
        let _ = write!(out, "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", left - 6, y + 13, esc(&r.name));
        for (j, b) in grid[i].iter().enumerate() {
            let a = if *b == 0 { 0.04 } else { 0.15 + 0.85 * (*b as f64 / max) };
            let _ = write!(
                out,
                "<rect x=\"{}\" y=\"{y}\" width=\"{cell_w}\" height=\"{}\" fill=\"#c0392b\" fill-opacity=\"{a:.3}\"><title>{b} B</title></rect>",
                left + cell_w * j,
                cell_h - 2
            );
        }
    }
    out.push_str("</svg></figure>");
}

const CSS: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}h2{border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}\
th{cursor:pointer;background:#f3f3f3}td:first-child{text-align:left}svg text{font-size:12px}\
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dt{font-weight:bold}";

/// Click-to-sort tables (numbers numerically), then the rendered marker.
const SCRIPT: &str = "document.querySelectorAll('table.sortable').forEach(function(t){\
t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){\
var b=t.tBodies[0],rows=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';\
rows.sort(function(x,y){var a=x.cells[i].textContent,c=y.cells[i].textContent,na=parseFloat(a),nc=parseFloat(c);\
var r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r;});rows.forEach(function(r){b.appendChild(r);});});});});\
var drawn=Array.from(document.querySelectorAll('section.ebq-section')).filter(function(s){\
return s.querySelector('svg rect, table tbody tr, dl');}).length;document.body.dataset.sections=String(drawn);";
