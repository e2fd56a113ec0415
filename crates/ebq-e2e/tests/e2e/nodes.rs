//! Issue 38 item 4, "nodes summed right": three `ebq serve` instances stand
//! for three nodes of a fleet. Each scopes its query to its own cgroup v2
//! group (`cgroup = …`, checked in the kernel) in which a workload with a
//! known, different tally runs, and each has its own `instance` label (one
//! Prometheus scrapes all three) and its own `service.instance.id` (all push to
//! one OTLP receiver, windows as metrics and rows as logs). Then:
//!
//! - `sum by (comm)` of the counters over the instances = the sum of the three
//!   workloads' tallies (exact or accounted: counted + lost = truth);
//! - `histogram_quantile` over the summed native histograms is within the
//!   sketch's stated error of the exact quantile of all three workloads' sizes;
//! - the OTLP metric sums per `service.instance.id`, and the OTLP log records'
//!   `calls`, give each node's total, under each node's resource (the
//!   `[otlp] resource` table reaches the logs sink too, with the node's cgroup).
//!
//! A decoy with the same comm outside the three groups makes the same calls:
//! counting it would break every equality (scope is by cgroup, never by
//! counting programs: other BPF users may be on the machine).

use crate::cgroups::TestGroup;
use crate::common::{self, lost, Workload};
use crate::otlp::{attrs, metrics, number};
use crate::serve::{query_stats, tmp_dir, Daemons, Prometheus};
use ebq::QueryStats;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

/// One node: its name, its workload's pread64 sizes (cycled over `calls`).
struct Node {
    name: &'static str,
    calls: usize,
    sizes: &'static [usize],
}

/// Medians 3000, 5000 and 7000 alone; the union's quartiles, p90 and p99 fall
/// inside runs of one size (1000 ×100, 3000 ×225, 5000 ×150, 7000 ×75, 90000 ×50).
const NODES: [Node; 3] = [
    Node { name: "node-a", calls: 300, sizes: &[1000, 3000, 3000] },
    Node { name: "node-b", calls: 200, sizes: &[5000, 5000, 5000, 90_000] },
    Node { name: "node-c", calls: 100, sizes: &[3000, 7000, 7000, 7000] },
];

/// What a node's workload reported: calls, bytes, and its sizes as `(size, times)`.
struct Truth {
    calls: u64,
    bytes: u64,
    values: Vec<(usize, usize)>,
}

/// The workload's own report as the truth: its totals, and the sizes it says it
/// cycled through over its calls (whose sum must be its byte total).
fn truth(report: &serde_json::Value) -> Truth {
    let calls = report["total_calls"].as_u64().unwrap();
    let sizes: Vec<usize> = report["sizes"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap() as usize).collect();
    let mut per_size: BTreeMap<usize, usize> = BTreeMap::new();
    for j in 0..calls as usize {
        *per_size.entry(sizes[j % sizes.len()]).or_default() += 1;
    }
    let values: Vec<(usize, usize)> = per_size.into_iter().collect();
    let bytes = report["total_bytes"].as_u64().unwrap();
    assert_eq!(values.iter().map(|(v, n)| (v * n) as u64).sum::<u64>(), bytes, "{report}");
    Truth { calls, bytes, values }
}

/// The node's config: one query scoped to `group`, pushing windows to the
/// OTLP receiver at `otlp_port` and rows to the logs receiver at `logs_port`
/// under its own `service.instance.id`.
fn config(node: &Node, group: &str, otlp_port: u16, logs_port: u16) -> String {
    format!(
        "listen = \"127.0.0.1:{{port}}\"\n\n\
         [otlp]\nendpoint = \"http://127.0.0.1:{otlp_port}\"\ninterval = \"1h\"\n\
         resource = {{ \"service.instance.id\" = \"{}\", cluster = \"nodes-test\" }}\n\n\
         [[query]]\nname = \"io\"\ncgroup = \"{group}\"\n\
         sinks = [\"otlp+http://127.0.0.1:{logs_port}\"]\n\
         sql = \"SELECT comm, COUNT(*) AS calls, SUM(count) AS read_bytes, P50(count) AS p50_size_bytes, \
         P99(count) AS p99_size_bytes FROM syscalls.sys_enter_pread64 GROUP BY comm WINDOW(time, 500)\"\n",
        node.name
    )
}

/// Runs `node`'s workload inside `group` (moved there while it waits for its
/// start) and, at the same time, a decoy with the same comm and sizes outside it.
/// The workload is moved once it has set its comm: the dynamic loader before
/// that reads the libraries' headers with pread64 calls of its own, which are
/// not the workload's tally.
fn run_in(group: &TestGroup, node: &Node, comm: &str) -> serde_json::Value {
    let sizes = node.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(",");
    let calls = node.calls.to_string();
    let args = ["pread", "--fds", "1", "--calls", &calls, "--sizes", &sizes, "--comm", comm];
    let w = Workload::start(&args);
    let own_comm = format!("/proc/{}/comm", w.pid());
    common::wait_for(30, "the workload to set its comm", || {
        (std::fs::read_to_string(&own_comm).unwrap_or_default().trim() == comm).then_some(())
    });
    std::fs::write(group.group.join("cgroup.procs"), w.pid().to_string()).unwrap();
    let decoy = Workload::start(&args);
    w.go();
    decoy.go();
    decoy.report();
    w.report()
}

/// Per `service.instance.id`: the summed `calls` and `read_bytes` data points and
/// the summed count of the size histogram of every push (windows are deltas).
fn otlp_sums(pushes: &[crate::otlp::Push]) -> BTreeMap<String, (u64, u64, u64)> {
    let mut sums: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for (_, _, req, _) in pushes {
        let resource = attrs(&req.resource_metrics[0].resource.as_ref().unwrap().attributes);
        assert_eq!(resource["cluster"], "nodes-test", "{resource:?}");
        let m = metrics(req);
        let entry = sums.entry(resource["service.instance.id"].clone()).or_default();
        let total = |name: &str| match m.get(name).and_then(|c| c.data.as_ref()) {
            Some(Data::Sum(s)) => s.data_points.iter().map(|p| number(p) as u64).sum::<u64>(),
            _ => 0,
        };
        entry.0 += total("ebq_io_calls_total");
        entry.1 += total("ebq_io_read_bytes_total");
        if let Some(Data::ExponentialHistogram(h)) = m.get("ebq_io_size_histogram_bytes").and_then(|c| c.data.as_ref())
        {
            entry.2 += h.data_points.iter().map(|p| p.count).sum::<u64>();
        }
    }
    sums
}

/// Per `service.instance.id`: the summed `calls` of the log records, each
/// request's resource checked (the node's `[otlp] resource`, the host, the cgroup).
fn log_sums(got: &crate::otlp_logs::Got, groups: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    use crate::otlp_logs::{int, string};
    let mut sums: BTreeMap<String, u64> = BTreeMap::new();
    for req in &got.requests {
        let resource = &req.resource_logs[0].resource.as_ref().unwrap().attributes;
        let node = string(resource, "service.instance.id");
        assert_eq!(string(resource, "cluster"), "nodes-test");
        assert_eq!(string(resource, "host.name"), ebq::host::host_name());
        assert_eq!(string(resource, "ebq.cgroup.path"), groups[&node], "{node}'s records name its group");
        let calls: u64 =
            req.resource_logs[0].scope_logs[0].log_records.iter().map(|r| int(&r.attributes, "calls")).sum();
        *sums.entry(node).or_default() += calls;
    }
    sums
}

/// Prometheus's view of the fleet: three series with distinct `instance`
/// labels, each the node's own count; `sum by (comm)` of the counters = the
/// sum of the truths; the summed native histograms' count, sum and quantiles.
/// Returns what each node counted (by node name).
fn assert_prometheus_sums(
    prom: &Prometheus,
    ports: &[u16],
    truths: &[Truth],
    stats: &[QueryStats],
    comm: &str,
) -> BTreeMap<String, u64> {
    let series = format!("ebq_io_calls_total{{job=\"ebq\",comm=\"{comm}\"}}");
    let per_instance: BTreeMap<String, f64> = prom
        .query(&series)
        .into_iter()
        .map(|(labels, v, _)| (labels["instance"].as_str().unwrap().to_string(), v))
        .collect();
    let instance = |i: usize| format!("127.0.0.1:{}", ports[i]);
    let instances: BTreeSet<String> = (0..ports.len()).map(instance).collect();
    assert_eq!(per_instance.keys().cloned().collect::<BTreeSet<_>>(), instances, "{per_instance:?}");
    let mut counted: BTreeMap<String, u64> = BTreeMap::new();
    for (i, node) in NODES.iter().enumerate() {
        let (got, t) = (per_instance[&instance(i)] as u64, &truths[i]);
        eprintln!("{}: counted {got} calls; workload {} calls, {} bytes; {:?}", node.name, t.calls, t.bytes, stats[i]);
        common::assert_exact_or_accounted(got, t.calls, &stats[i], &format!("{}'s calls", node.name));
        counted.insert(node.name.to_string(), got);
    }
    let all_stats = QueryStats {
        dropped: stats.iter().map(|s| s.dropped).sum(),
        missed: stats.iter().map(|s| s.missed).sum(),
        ..Default::default()
    };
    let (calls, bytes): (u64, u64) = (truths.iter().map(|t| t.calls).sum(), truths.iter().map(|t| t.bytes).sum());
    assert_eq!((calls, bytes), (600, 6_550_000));
    // Over every series of the query: one comm, the workloads' (the groups hold nothing else).
    let sum_calls = prom.single("sum by (comm) (ebq_io_calls_total{job=\"ebq\"})");
    let sum_bytes = prom.single("sum by (comm) (ebq_io_read_bytes_total{job=\"ebq\"})");
    eprintln!(
        "fleet: sum by (comm): calls {sum_calls} (truth {calls}), bytes {sum_bytes} (truth {bytes}); {all_stats:?}"
    );
    common::assert_exact_or_accounted(sum_calls as u64, calls, &all_stats, "sum by (comm) of the calls");
    assert_eq!(sum_calls as u64, counted.values().sum::<u64>());
    let h = format!("ebq_io_size_histogram_bytes{{job=\"ebq\",comm=\"{comm}\"}}");
    assert_eq!(prom.one(&format!("histogram_count(sum({h}))")), Some(sum_calls));
    if lost(&all_stats) > 0 {
        eprintln!("fleet: events reported lost ({all_stats:?}): bytes and quantiles not compared");
        return counted;
    }
    assert_eq!(sum_bytes as u64, bytes, "sum by (comm) of the bytes");
    assert_eq!(prom.one(&format!("histogram_sum(sum({h}))")), Some(bytes as f64));
    let all: Vec<(usize, usize)> = truths.iter().flat_map(|t| t.values.clone()).collect();
    let quantiles = [("0.25", 250_000), ("0.5", 500_000), ("0.75", 750_000), ("0.9", 900_000), ("0.99", 990_000)];
    let exact = quantiles.map(|(_, ppm)| crate::serve::exact_quantile(&all, ppm));
    assert_eq!(exact, [3000.0, 3000.0, 5000.0, 7000.0, 90_000.0]);
    prom.assert_quantiles_near(&format!("sum({h})"), &all, &quantiles);
    // Each node alone has its own median (3000, 5000, 7000): the sum really merged all three.
    for (i, t) in truths.iter().enumerate() {
        let native = format!("sum(ebq_io_size_histogram_bytes{{instance=\"{}\"}})", instance(i));
        prom.assert_quantiles_near(&native, &t.values, &[("0.5", 500_000)]);
    }
    counted
}

/// The OTLP receivers' view once the daemons have stopped (every push and
/// every queued record is out by then): per `service.instance.id`, the metric
/// sums and the log records' calls are what the node counted, and add up to
/// the fleet's sum; bytes are the node's truth when it lost nothing.
fn assert_otlp_sums(
    pushes: &std::sync::mpsc::Receiver<crate::otlp::Push>,
    logs: &crate::otlp_logs::Got,
    paths: &[String],
    counted: &BTreeMap<String, u64>,
    (truths, stats): (&[Truth], &[QueryStats]),
) {
    let pushed: Vec<crate::otlp::Push> =
        std::iter::from_fn(|| pushes.recv_timeout(Duration::from_secs(2)).ok()).collect();
    let sums = otlp_sums(&pushed);
    let groups: BTreeMap<String, String> =
        NODES.iter().zip(paths).map(|(n, p)| (n.name.to_string(), p.clone())).collect();
    let rows = log_sums(logs, &groups);
    eprintln!("OTLP per service.instance.id: (calls, bytes, histogram count) {sums:?}; log records' calls {rows:?}");
    assert_eq!(sums.keys().collect::<Vec<_>>(), ["node-a", "node-b", "node-c"], "{sums:?}");
    for (i, node) in NODES.iter().enumerate() {
        let (c, b, n) = sums[node.name];
        assert_eq!((c, n), (counted[node.name], counted[node.name]), "{}: OTLP = Prometheus", node.name);
        assert_eq!(rows.get(node.name).copied(), Some(counted[node.name]), "{}: log records = Prometheus", node.name);
        if lost(&stats[i]) == 0 {
            assert_eq!(b, truths[i].bytes, "{}'s bytes over OTLP", node.name);
        }
    }
    let otlp_calls: u64 = sums.values().map(|s| s.0).sum();
    assert_eq!(otlp_calls, counted.values().sum::<u64>(), "the OTLP sums add up to Prometheus's sum by (comm)");
}

#[test]
fn three_nodes_sum_exactly_in_prometheus_and_over_otlp() {
    let dir = tmp_dir("nodes");
    let comm = format!("nodes{}", std::process::id() % 100_000);
    let (otlp_port, pushes) = crate::otlp::receiver();
    let (logs_port, logs) = crate::otlp_logs::receiver(|_| 200);
    let groups: Vec<TestGroup> = NODES.iter().map(|n| TestGroup::new(&format!("{}-", n.name))).collect();
    let paths: Vec<String> = groups.iter().map(|g| g.group.display().to_string()).collect();
    let configs: Vec<String> =
        NODES.iter().zip(&paths).map(|(n, path)| config(n, path, otlp_port, logs_port)).collect();
    let daemons = Daemons::start(&dir, &configs);
    let prom = Prometheus::start_with(&dir, &daemons.ports(), &["--enable-feature=native-histograms"]);

    let truths: Vec<Truth> = NODES.iter().zip(&groups).map(|(n, g)| truth(&run_in(g, n, &comm))).collect();
    daemons.wait_closed_window("io");
    let closed = SystemTime::now();
    let stats: Vec<QueryStats> = daemons.0.iter().map(|(d, _)| query_stats(&d.metrics(), "io")).collect();
    prom.wait_scraped_after(&format!("ebq_io_calls_total{{job=\"ebq\",comm=\"{comm}\"}}"), 3, closed);
    let counted = assert_prometheus_sums(&prom, &daemons.ports(), &truths, &stats, &comm);
    drop(prom);
    daemons.stop();
    assert_otlp_sums(&pushes, &logs.lock().unwrap(), &paths, &counted, (&truths, &stats));
    drop(groups);
    let _ = std::fs::remove_dir_all(&dir);
}
