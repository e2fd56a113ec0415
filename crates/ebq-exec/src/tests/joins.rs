//! A join of two streams: rows to panes, the window-complete rule, late rows
//! and the held-row bound, the hash join's key comparison and order, and a
//! window's residual filter, aggregates and user plan.

use crate::decode::Value;
use crate::fixture::physical;
use crate::hash_join::{hash_join, join_output};
use crate::join_panes::JoinPanes;
use crate::window::WindowBounds;
use ebq_front::bind::JoinKey;
use ebq_front::types::DataType;

/// A join stream's row: field 0 is `time`, then a tag.
fn at(time: u64, tag: u64) -> Vec<Value> {
    vec![Value::U(time), Value::U(tag)]
}

fn tags<'a>(rows: impl Iterator<Item = &'a Vec<Value>>) -> Vec<u64> {
    rows.map(|r| match r[1] {
        Value::U(t) => t,
        _ => panic!("a tag"),
    })
    .collect()
}

#[test]
fn rows_go_to_panes_and_a_window_closes_grace_after_its_last_pane() {
    // Panes of 100 ns from 1000, windows of two panes, 50 ns of grace.
    let mut panes = JoinPanes::new(1000, 100, 50, 2, 10);
    panes.add(0, vec![at(1000, 1), at(1150, 2), at(1099, 3), at(900, 4)]).unwrap();
    panes.add(1, vec![at(1120, 5)]).unwrap();
    assert_eq!((panes.pane_of(1099), panes.pane_of(1100), panes.pane_of(900)), (0, 1, 0));
    assert_eq!(panes.next_close_at(), 1150);
    assert!(!panes.next_is_complete(1149));
    assert!(panes.next_is_complete(1150));
    assert_eq!(tags(panes.window_rows(0)), vec![1, 3, 4]);
    assert_eq!(tags(panes.window_rows(1)), Vec::<u64>::new());
    // The first window is pane 0 alone; no pane is done yet (pane 0 is in the next window too).
    assert_eq!(panes.close_next(None), WindowBounds::Time { start_ns: 1000, end_ns: 1100 });
    assert_eq!(panes.held(), 5);
    assert_eq!(tags(panes.window_rows(0)), vec![1, 3, 4, 2]);
    assert_eq!(tags(panes.window_rows(1)), vec![5]);
    // The query ends inside pane 1: the window ends then; pane 0 is forgotten.
    assert_eq!(panes.close_next(Some(1175)), WindowBounds::Time { start_ns: 1000, end_ns: 1175 });
    assert_eq!((panes.next_pane(), panes.held()), (2, 2));
    assert_eq!(panes.next_close_at(), 1350);
    // A row for a closed pane is late: counted, not held.
    panes.add(1, vec![at(1199, 6)]).unwrap();
    assert_eq!((panes.late(), panes.held()), (1, 2));
}

#[test]
fn join_panes_refuse_to_hold_more_rows_than_the_bound() {
    let mut panes = JoinPanes::new(0, 100, 0, 1, 3);
    panes.add(0, vec![at(1, 1), at(2, 2), at(3, 3)]).unwrap();
    let err = panes.add(1, vec![at(4, 4)]).unwrap_err().to_string();
    assert!(err.contains("the join holds more than 3 rows in its open windows"), "{err}");
}

#[test]
fn hash_join_pairs_equal_keys_in_left_order_comparing_integers_in_the_key_type() {
    // Left rows (tag, key), right rows (key, tag); keys compared as u64.
    let keys = [JoinKey { left: 1, right: 0, ty: DataType::Int { bits: 64, signed: false } }];
    let left = [vec![Value::U(1), Value::I(-1)], vec![Value::U(2), Value::I(7)], vec![Value::U(3), Value::I(8)]];
    let right =
        [vec![Value::U(7), Value::U(10)], vec![Value::U(u64::MAX), Value::U(11)], vec![Value::U(7), Value::U(12)]];
    let joined = hash_join(&keys, left.iter(), right.iter());
    assert_eq!(
        joined,
        vec![
            vec![Value::U(1), Value::I(-1), Value::U(u64::MAX), Value::U(11)],
            vec![Value::U(2), Value::I(7), Value::U(7), Value::U(10)],
            vec![Value::U(2), Value::I(7), Value::U(7), Value::U(12)],
        ]
    );
    // Compared as signed, -1 and u64::MAX are still the same 64 bits.
    let signed = [JoinKey { ty: DataType::Int { bits: 64, signed: true }, ..keys[0] }];
    assert_eq!(hash_join(&signed, left.iter(), right.iter()).len(), 3);
}

#[test]
fn a_joined_window_is_filtered_grouped_and_ordered() {
    let p = physical(
        "SELECT a.fd, COUNT(*) AS n, SUM(b.ret) AS bytes, MIN(b.ret) AS least, MAX(b.ret) AS most, \
         COUNT(DISTINCT b.ret) AS sizes FROM syscalls.sys_enter_pread64 a, syscalls.sys_exit_pread64 b \
         WHERE a.tid = b.tid AND a.time <= b.time GROUP BY a.fd ORDER BY a.fd WINDOW(time, 1000)",
    );
    let join = p.window_join().expect("a stream join");
    let field = |name: &str| join.joined_names.iter().position(|n| n == name).unwrap_or_else(|| panic!("{name}"));
    let row = |t0: u64, fd: u64, t1: u64, ret: i64| {
        let mut r = vec![Value::U(0); join.joined_names.len()];
        r[field("a.time")] = Value::U(t0);
        r[field("a.fd")] = Value::U(fd);
        r[field("b.time")] = Value::U(t1);
        r[field("b.ret")] = Value::I(ret);
        r
    };
    let joined = vec![
        row(10, 5, 20, 100),
        row(30, 4, 40, -2),
        row(50, 5, 60, 100),
        row(70, 5, 60, 999), // b before a: the residual drops it
        row(80, 5, 90, 7),
    ];
    let out = join_output(join.residual.as_ref(), join.aggregate.as_ref(), &p.user, joined);
    assert_eq!(
        out,
        vec![
            vec![Value::U(4), Value::U(1), Value::I(-2), Value::I(-2), Value::I(-2), Value::U(1)],
            vec![Value::U(5), Value::U(3), Value::I(207), Value::I(7), Value::I(100), Value::U(2)],
        ]
    );
}
