//! [`SingleQuery`]'s logic over a fake kernel object: window flips, count
//! windows, finishing, accounting and row delivery, with exact values and
//! the exact order of kernel accesses.

use super::SingleQuery;
use crate::fake_object::{fake_query, stats_bytes, Call, FakeKernel};
use crate::{monotonic_ns, Output, ProgramStats, QueryStats};
use ebq_exec::fixture::{aggregate, bytes_of, physical};
use ebq_exec::{Value, WindowBounds};
use ebq_front::plan::{KernelOutput, PhysicalPlan, UserSource};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// `sql` planned over the fixture kernel and driven over `kernel`.
fn query(sql: &str, kernel: &Rc<FakeKernel>) -> SingleQuery {
    fake_query(&physical(sql), kernel, false)
}

/// The key of group `fd` in kernel window `window` of a `GROUP BY fd` plan.
fn fd_key(p: &PhysicalPlan, window: u64, fd: u64) -> Vec<u8> {
    let (key, _) = aggregate(p);
    let UserSource::Key(fd_field) = p.user.inputs[0] else { panic!("input 0 is the fd key") };
    let w = key.fields.iter().position(|f| f.name == "window").expect("a windowed plan");
    bytes_of(key, &[(w, window), (fd_field, fd)])
}

/// Puts group `fd` of `window` with these per-CPU counts into the fake's map.
fn put_group(kernel: &FakeKernel, p: &PhysicalPlan, window: u64, fd: u64, counts: &[u64]) -> Vec<u8> {
    let (_, value) = aggregate(p);
    let k = fd_key(p, window, fd);
    kernel.groups.borrow_mut().insert(k.clone(), counts.iter().map(|&n| bytes_of(value, &[(0, n)])).collect());
    k
}

/// `[Read(k), Remove(k)]` for each key, in the map's (sorted) order.
fn read_and_removed(mut keys: Vec<Vec<u8>>) -> Vec<Call> {
    keys.sort();
    keys.into_iter().flat_map(|k| [Call::Read(k.clone()), Call::Remove(k)]).collect()
}

/// The rows of an output.
fn rows(out: &Output) -> Vec<Vec<Value>> {
    ebq_exec::sink::rows(&out.batch).collect()
}

fn u(values: &[u64]) -> Vec<Value> {
    values.iter().map(|&v| Value::U(v)).collect()
}

const PER_FD: &str = "SELECT fd, COUNT(*) AS n FROM syscalls.sys_enter_pread64 GROUP BY fd";

#[test]
fn a_time_window_flip_bumps_the_counter_then_reads_and_clears_only_the_closing_window() {
    let kernel = Rc::new(FakeKernel::default());
    let mut q = query(&format!("{PER_FD} WINDOW(time, 1000)"), &kernel);
    let p = q.plan.clone();
    let closing = vec![put_group(&kernel, &p, 0, 3, &[2, 1]), put_group(&kernel, &p, 0, 4, &[1])];
    // Counted after the flip's write, before the grace period ended: the next window's.
    let next = put_group(&kernel, &p, 1, 3, &[5, 0]);
    let start = q.window_start_ns;
    let flip_at = Instant::now();
    q.next_flip = Some(flip_at);
    let before = monotonic_ns();
    let out = q.poll(Duration::ZERO).unwrap();
    let after = monotonic_ns();

    let mut expected = vec![Call::SetWindow(1), Call::Wait, Call::Keys];
    expected.extend(read_and_removed(closing));
    assert_eq!(kernel.take_log(), expected);
    assert_eq!(kernel.groups.borrow().keys().cloned().collect::<Vec<_>>(), vec![next.clone()]);
    assert_eq!(out.len(), 1);
    assert_eq!(rows(&out[0]), vec![u(&[3, 3]), u(&[4, 1])]);
    let WindowBounds::Time { start_ns, end_ns } = out[0].window else { panic!("a time window") };
    assert_eq!(start_ns, start);
    assert!(before <= end_ns && end_ns <= after, "{before} <= {end_ns} <= {after}");
    assert_eq!(q.window_start_ns, end_ns, "the next window starts where this one ended");
    assert_eq!(q.next_flip, Some(flip_at + Duration::from_millis(1000)));

    // Not yet time: nothing is touched.
    assert!(q.poll(Duration::ZERO).unwrap().is_empty());
    assert_eq!(kernel.take_log(), vec![]);

    q.next_flip = Some(Instant::now());
    let out = q.poll(Duration::ZERO).unwrap();
    let mut expected = vec![Call::SetWindow(2), Call::Wait, Call::Keys];
    expected.extend(read_and_removed(vec![next]));
    assert_eq!(kernel.take_log(), expected);
    assert_eq!(rows(&out[0]), vec![u(&[3, 5])]);
    assert_eq!(out[0].window, WindowBounds::Time { start_ns: end_ns, end_ns: q.window_start_ns });
}

#[test]
fn count_windows_drain_in_order_up_to_the_sequence_then_finish_detaches_before_the_last_read() {
    let kernel = Rc::new(FakeKernel::default());
    let mut q = query(&format!("{PER_FD} WINDOW(count, 100, 100)"), &kernel);
    let p = q.plan.clone();
    let first = vec![put_group(&kernel, &p, 0, 3, &[60, 30]), put_group(&kernel, &p, 0, 4, &[10])];
    // Window 1 had no group (all its events were filtered out by HAVING… or none matched).
    let third = vec![put_group(&kernel, &p, 2, 5, &[100])];
    let open = put_group(&kernel, &p, 3, 3, &[7]);

    kernel.seq.set(299);
    let out = q.poll(Duration::ZERO).unwrap();
    let mut expected = vec![Call::Sequence, Call::Wait, Call::Keys];
    expected.extend(read_and_removed(first));
    assert_eq!(kernel.take_log(), expected);
    assert_eq!(
        out.iter().map(|o| o.window).collect::<Vec<_>>(),
        vec![WindowBounds::Count { index: 0 }, WindowBounds::Count { index: 1 }]
    );
    assert_eq!(rows(&out[0]), vec![u(&[3, 90]), u(&[4, 10])]);
    assert_eq!(rows(&out[1]), Vec::<Vec<Value>>::new());

    // The sequence moved within window 2: nothing closes, nothing is read.
    kernel.seq.set(300 - 1);
    assert!(q.poll(Duration::ZERO).unwrap().is_empty());
    assert_eq!(kernel.take_log(), vec![Call::Sequence]);

    kernel.seq.set(301);
    let out = q.poll(Duration::ZERO).unwrap();
    let mut expected = vec![Call::Sequence, Call::Wait, Call::Keys];
    expected.extend(read_and_removed(third));
    assert_eq!(kernel.take_log(), expected);
    assert_eq!(
        out.iter().map(|o| (o.window, rows(o))).collect::<Vec<_>>(),
        vec![(WindowBounds::Count { index: 2 }, vec![u(&[5, 100])])]
    );

    // The end: detach, wait, then read the partial window (no second wait).
    let out = q.finish().unwrap();
    let mut expected = vec![Call::Detach, Call::Wait, Call::Keys];
    expected.extend(read_and_removed(vec![open]));
    assert_eq!(kernel.take_log(), expected);
    assert_eq!(
        out.iter().map(|o| (o.window, rows(o))).collect::<Vec<_>>(),
        vec![(WindowBounds::Count { index: 3 }, vec![u(&[3, 7])])]
    );
    assert!(q.is_finished());
    assert!(q.finish().unwrap().is_empty() && q.poll(Duration::ZERO).unwrap().is_empty());
    assert_eq!(kernel.take_log(), vec![], "finished: the kernel is not touched again");
}

#[test]
fn finishing_an_aggregate_detaches_waits_then_reads_the_whole_run() {
    let kernel = Rc::new(FakeKernel::default());
    let mut q = query(PER_FD, &kernel);
    let p = q.plan.clone();
    let (key, value) = aggregate(&p);
    let UserSource::Key(fd) = p.user.inputs[0] else { panic!("input 0 is the fd key") };
    let k = bytes_of(key, &[(fd, 9)]);
    kernel.groups.borrow_mut().insert(k.clone(), vec![bytes_of(value, &[(0, 4)]), bytes_of(value, &[(0, 6)])]);
    let start = q.window_start_ns;
    let before = monotonic_ns();
    let out = q.finish().unwrap();
    let after = monotonic_ns();
    assert_eq!(kernel.take_log(), [vec![Call::Detach, Call::Wait, Call::Keys], read_and_removed(vec![k])].concat());
    assert_eq!(rows(&out[0]), vec![u(&[9, 10])]);
    let WindowBounds::Time { start_ns, end_ns } = out[0].window else { panic!("a time window") };
    assert_eq!(start_ns, start);
    assert!(before <= end_ns && end_ns <= after, "the window ends when detaching starts");
}

fn programs() -> Vec<ProgramStats> {
    vec![
        ProgramStats { name: "ebq_follow_fork".into(), run_cnt: 7, run_time_ns: 70, recursion_misses: 2 },
        ProgramStats { name: "ebq_query".into(), run_cnt: 15, run_time_ns: 900, recursion_misses: 5 },
    ]
}

#[test]
fn aggregate_stats_add_up_the_cpus_and_deliver_what_was_not_dropped() {
    let kernel = Rc::new(FakeKernel { programs: programs(), ..FakeKernel::default() });
    *kernel.stats.borrow_mut() = vec![stats_bytes([10, 8, 1, 2, 3, 4]), stats_bytes([5, 4, 2, 0, 1, 0])];
    let q = query(PER_FD, &kernel);
    let s = q.stats().unwrap();
    let expected = QueryStats {
        seen: 15,
        matched: 12,
        delivered: 9,
        dropped: 3,
        unmatched: 2,
        pending_full: 4,
        untracked: 4,
        bpf_run_cnt: 15,
        bpf_run_time_ns: 900,
        missed: 5,
        missed_tracking: 2,
        user_cpu_ns: s.user_cpu_ns,
        ..QueryStats::default()
    };
    assert_eq!(s, expected);
    assert_eq!(q.program_stats(), programs());
}

#[test]
fn a_timers_periods_not_run_are_missed_the_kernel_counts_none() {
    // 12 periods of the timer, 7 runs, and the 5 misses programs() says the kernel counted.
    let kernel = Rc::new(FakeKernel { programs: programs(), timer_periods: Some(12), ..FakeKernel::default() });
    *kernel.stats.borrow_mut() = vec![stats_bytes([7, 7, 0, 0, 0, 0])];
    let s = query(PER_FD, &kernel).stats().unwrap();
    assert_eq!((s.seen, s.missed), (7, 5 + 5), "12 − 7 periods not run, plus programs()' 5");
    // More runs than periods (a union with another event): nothing is invented.
    let kernel = Rc::new(FakeKernel { timer_periods: Some(3), ..FakeKernel::default() });
    *kernel.stats.borrow_mut() = vec![stats_bytes([7, 7, 0, 0, 0, 0])];
    assert_eq!(query(PER_FD, &kernel).stats().unwrap().missed, 0);
}

/// A ring-buffer record of a one-column (`fd`) row plan.
fn fd_record(p: &PhysicalPlan, fd: u64) -> Vec<u8> {
    let KernelOutput::Rows { record, .. } = &p.programs[0].output else { panic!("a row plan") };
    let UserSource::Row(f) = p.user.inputs[0] else { panic!("input 0 is a row field") };
    bytes_of(record, &[(f, fd)])
}

/// A one-column (`fd`) row query of `sql` over a fresh fake kernel.
fn fd_rows(sql: &str) -> (Rc<FakeKernel>, SingleQuery) {
    let kernel = Rc::new(FakeKernel::default());
    let q = query(sql, &kernel);
    (kernel, q)
}

/// Commits `fds` as records of `q` to the fake's ring buffer.
fn commit(kernel: &FakeKernel, q: &SingleQuery, fds: &[u64]) {
    kernel.records.borrow_mut().extend(fds.iter().map(|&fd| fd_record(&q.plan, fd)));
}

#[test]
fn rows_stream_until_the_limit_and_count_what_was_delivered() {
    let (kernel, mut q) = fd_rows("SELECT fd FROM syscalls.sys_enter_pread64 LIMIT 3");
    *kernel.stats.borrow_mut() = vec![stats_bytes([9, 6, 1, 0, 0, 0])];
    commit(&kernel, &q, &[4, 5]);
    let out = q.poll(Duration::ZERO).unwrap();
    assert_eq!(out.iter().map(rows).collect::<Vec<_>>(), vec![vec![u(&[4]), u(&[5])]]);
    assert_eq!(out[0].window, WindowBounds::Rows);
    assert!(!q.limit_reached());
    commit(&kernel, &q, &[6, 7]);
    // A short record (not a whole row) is skipped.
    kernel.records.borrow_mut().push_back(vec![1, 2]);
    let out = q.poll(Duration::ZERO).unwrap();
    assert_eq!(out.iter().map(rows).collect::<Vec<_>>(), vec![vec![u(&[6])]]);
    assert!(q.limit_reached());
    assert_eq!(kernel.take_log(), vec![Call::Ring(true), Call::Ring(true)]);
    // Delivered is what user space received, not matched - dropped.
    assert_eq!(q.stats().unwrap().delivered, 4);
    commit(&kernel, &q, &[8]);
    assert!(q.poll(Duration::ZERO).unwrap().is_empty(), "past the limit");
}

#[test]
fn ordered_rows_are_held_until_the_end_read_after_detaching() {
    let (kernel, mut q) = fd_rows("SELECT fd FROM syscalls.sys_enter_pread64 ORDER BY fd DESC LIMIT 2");
    commit(&kernel, &q, &[5, 9]);
    assert!(q.poll(Duration::ZERO).unwrap().is_empty());
    commit(&kernel, &q, &[7, 1]);
    assert!(q.poll(Duration::ZERO).unwrap().is_empty());
    assert!(!q.limit_reached(), "ORDER BY: the first rows are not the top ones");
    assert_eq!(q.held_rows(), 4, "LIMIT 2 compacts only once 1024 rows are held");
    commit(&kernel, &q, &[8]);
    let out = q.finish().unwrap();
    assert_eq!(
        kernel.take_log(),
        vec![Call::Ring(true), Call::Ring(true), Call::Detach, Call::Wait, Call::Ring(false)]
    );
    assert_eq!(out.iter().map(rows).collect::<Vec<_>>(), vec![vec![u(&[9]), u(&[8])]]);
    assert_eq!(q.stats().unwrap().delivered, 5);
}

#[test]
fn tracked_pids_go_to_the_object() {
    let kernel = Rc::new(FakeKernel::default());
    let q = query(PER_FD, &kernel);
    q.track_pid(42).unwrap();
    assert_eq!(kernel.take_log(), vec![Call::TrackPid(42)]);
}

#[test]
fn ordered_rows_without_limit_stop_the_query_past_their_bound() {
    let (kernel, mut q) = fd_rows("SELECT fd FROM syscalls.sys_enter_pread64 ORDER BY fd");
    q.set_max_sorted_rows(2);
    commit(&kernel, &q, &[5, 9]);
    assert!(q.poll(Duration::ZERO).unwrap().is_empty());
    commit(&kernel, &q, &[7]);
    let e = q.poll(Duration::ZERO).unwrap_err().to_string();
    assert!(e.contains("more than 2 rows arrived"), "{e}");
}
