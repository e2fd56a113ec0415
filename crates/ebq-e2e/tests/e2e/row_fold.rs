//! A kernel fold (`PlanOptions::row_fold`): a row query's rows handed, in the
//! kernel, to the caller's C instead of a ring buffer, and the fold's maps
//! read after the run. Ground truth: the workload's own count of its calls.

use crate::common;

use common::Workload;
use ebq::plan::{PlanOptions, RowFold};
use ebq::{Engine, RunningQuery, Scope};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls and bytes asked per fd (a shared HASH, atomic adds: both CPUs fold
/// at once), and rows folded per CPU (a PERCPU_ARRAY).
const FOLD: &str = r#"
struct fd_calls {
	__u64 calls;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct fd_calls);
} fold_fds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fold_rows SEC(".maps");

static __always_inline int ebq_fold(struct ebq_row *r)
{
	__u64 fd = r->EBQ_ROW_fd;
	__u32 zero = 0;
	struct fd_calls fresh = {};
	struct fd_calls *c;
	__u64 *rows;

	bpf_map_update_elem(&fold_fds, &fd, &fresh, BPF_NOEXIST);
	c = bpf_map_lookup_elem(&fold_fds, &fd);
	if (!c)
		return 1;
	__sync_fetch_and_add(&c->calls, 1);
	__sync_fetch_and_add(&c->bytes, r->EBQ_ROW_count);
	rows = bpf_map_lookup_elem(&fold_rows, &zero);
	if (rows)
		*rows += 1;
	return 0;
}
"#;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn every_row_of_threads_on_both_cpus_is_folded_in_the_kernel_exactly_once() {
    let fold =
        RowFold { name: "calls per fd".into(), source: FOLD.into(), maps: vec!["fold_fds".into(), "fold_rows".into()] };
    let engine =
        Engine::new().unwrap().with_options(PlanOptions { row_fold: Some(Arc::new(fold)), ..Default::default() });
    let sql = "SELECT fd, count FROM syscalls.sys_enter_pread64 WHERE fd >= 100";
    let prepared = engine.prepare(sql).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    assert!(prepared.explain().contains("handed to ebq_fold (calls per fd)"), "{}", prepared.explain());
    let w = Workload::start(&[
        "pread",
        "--fds",
        "2",
        "--calls",
        "3001,2000",
        "--fd-base",
        "100",
        "--sizes",
        "512",
        "--threads-per-cpu",
    ]);
    let mut q = RunningQuery::start(&prepared, Scope::Process(w.pid())).unwrap_or_else(|e| panic!("{}", e.render(sql)));
    w.go();
    let mut w = w;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut outs = vec![];
    while w.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "workload did not finish");
        outs.extend(q.poll(Duration::from_millis(20)).unwrap());
    }
    outs.extend(q.finish().unwrap());
    let stats = q.stats().unwrap();
    let report = w.report();
    // No row reaches user space: the rows stayed in the kernel.
    assert_eq!(outs.iter().map(|o| o.batch.num_rows()).sum::<usize>(), 0);
    assert_eq!((stats.matched, stats.delivered, stats.dropped), (5001, 5001, 0), "{stats:?}");

    let mut want: BTreeMap<u64, u64> = BTreeMap::new();
    for f in report["fds"].as_array().unwrap() {
        let calls: u64 = f["per_cpu"].as_array().unwrap().iter().map(|t| t["calls"].as_u64().unwrap()).sum();
        want.insert(f["fd"].as_u64().unwrap(), calls);
    }
    assert_eq!(want.values().sum::<u64>(), 5001, "{report}");
    let got: BTreeMap<u64, (u64, u64)> = q
        .fold_map("fold_fds")
        .unwrap()
        .into_iter()
        .map(|(k, v)| (u64_at(&k, 0), (u64_at(&v[0], 0), u64_at(&v[0], 8))))
        .collect();
    assert_eq!(got.keys().collect::<Vec<_>>(), want.keys().collect::<Vec<_>>());
    for (fd, calls) in &want {
        assert_eq!(got[fd], (*calls, calls * 512), "fd {fd}: (calls, bytes asked)");
    }
    // The per-CPU map comes back one value per CPU; both CPUs folded rows.
    let per_cpu = q.fold_map("fold_rows").unwrap();
    let rows: Vec<u64> = per_cpu[0].1.iter().map(|v| u64_at(v, 0)).collect();
    assert_eq!(rows.iter().sum::<u64>(), 5001);
    assert!(rows.iter().filter(|n| **n > 0).count() >= 2, "rows per CPU: {rows:?}");
    assert!(q.fold_map("no_such_map").is_err());
}
