//! [`JoinQuery`] over two fake kernel objects: finishing detaches both
//! streams before reading what is left, and the accounting adds them up.

use super::JoinQuery;
use crate::fake_object::{fake_query, stats_bytes, Call, FakeKernel};
use crate::{monotonic_ns, ProgramStats};
use ebq_exec::fixture::{bytes_of, physical};
use ebq_exec::{Value, WindowBounds};
use ebq_front::plan::{KernelOutput, PhysicalPlan};
use std::rc::Rc;

const JOIN: &str = "SELECT a.fd, b.ret FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
                    WHERE a.tid = b.tid WINDOW(time, 1000)";

/// A ring-buffer record of `stream` with its fields set by column name
/// (record fields are named `cN_column`).
fn record(stream: &PhysicalPlan, fields: &[(&str, u64)]) -> Vec<u8> {
    let KernelOutput::Rows { record, .. } = &stream.programs[0].output else { panic!("a row stream") };
    let at = |name: &str| {
        record
            .fields
            .iter()
            .position(|f| f.name.split_once('_').is_some_and(|(_, c)| c == name))
            .unwrap_or_else(|| panic!("{name} in {:?}", record.fields))
    };
    bytes_of(record, &fields.iter().map(|&(n, v)| (at(n), v)).collect::<Vec<_>>())
}

fn query_program(run_cnt: u64) -> Vec<ProgramStats> {
    vec![ProgramStats { name: "ebq_query".into(), run_cnt, run_time_ns: run_cnt * 10, recursion_misses: run_cnt / 10 }]
}

#[test]
fn finishing_a_join_detaches_both_streams_then_reads_both_rings_and_joins_the_last_window() {
    let plan = physical(JOIN);
    let join = plan.window_join().expect("a join of two streams").clone();
    let log = Rc::new(std::cell::RefCell::new(vec![]));
    let kernels = [11, 22]
        .map(|runs| Rc::new(FakeKernel { log: log.clone(), programs: query_program(runs), ..FakeKernel::default() }));
    let streams = [plan.stream(&join, 0), plan.stream(&join, 1)];
    let sides = [0, 1].map(|i| fake_query(&streams[i], &kernels[i], true));
    let origin = monotonic_ns();
    let mut q = JoinQuery::new(&plan, &join, sides, origin);

    let t = origin + 10;
    kernels[0].records.borrow_mut().push_back(record(&streams[0], &[("time", t), ("tid", 7), ("fd", 3)]));
    kernels[1].records.borrow_mut().extend([
        record(&streams[1], &[("time", t + 1), ("tid", 7), ("ret", 100)]),
        record(&streams[1], &[("time", t + 2), ("tid", 8), ("ret", 5)]),
    ]);
    *kernels[0].stats.borrow_mut() = vec![stats_bytes([4, 1, 0, 0, 0, 1]), stats_bytes([2, 0, 0, 0, 0, 0])];
    *kernels[1].stats.borrow_mut() = vec![stats_bytes([6, 3, 1, 0, 0, 0])];

    let out = q.finish().unwrap();
    assert_eq!(*log.borrow(), vec![Call::Detach, Call::Detach, Call::Wait, Call::Ring(false), Call::Ring(false)]);
    assert_eq!(out.len(), 1);
    assert_eq!(ebq_exec::sink::rows(&out[0].batch).collect::<Vec<_>>(), vec![vec![Value::U(3), Value::I(100)]]);
    let WindowBounds::Time { start_ns, end_ns } = out[0].window else { panic!("a time window") };
    assert_eq!(start_ns, origin);
    assert!(end_ns > t + 2, "the last window ends when the query does");
    assert!(q.is_finished());

    // Both streams added up; a join reports neither pairing counter.
    let s = q.stats().unwrap();
    let counts = [s.seen, s.matched, s.delivered, s.dropped, s.untracked, s.unmatched, s.pending_full, s.late];
    assert_eq!(counts, [12, 4, 3, 1, 1, 0, 0, 0]);
    assert_eq!((s.bpf_run_cnt, s.bpf_run_time_ns, s.missed), (33, 330, 3));
    assert_eq!(q.program_stats(), [query_program(11), query_program(22)].concat());
}
