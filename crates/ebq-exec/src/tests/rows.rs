//! Rows: field decoding of every width and sign, strings, HAVING +
//! projection + ORDER BY + LIMIT, the ORDER BY row bound, histogram cells.

use crate::decode::{self, Value};
use crate::fixture::physical;
use crate::hist_values::{hist_cell, hist_column};
use crate::sorted::SortedRows;
use crate::user::{apply, top_inputs};
use ebq_front::hist::Bucket;
use ebq_front::plan::StructLayout;
use ebq_front::types::DataType;

#[test]
fn fields_decode_integers_of_each_width_and_sign_strings_bools_and_floats() {
    let int = |bits: u8, signed: bool| DataType::Int { bits, signed };
    let types = [
        int(8, true),
        int(16, true),
        int(32, true),
        int(64, true),
        int(8, false),
        int(16, false),
        int(32, false),
        int(64, false),
        DataType::Str { cap: 8 },
        DataType::Str { cap: 4 },
        DataType::Bool,
        DataType::Float,
    ];
    let (layout, index) =
        StructLayout::new(&types.iter().enumerate().map(|(i, t)| (format!("f{i}"), *t)).collect::<Vec<_>>());
    let mut bytes = vec![0u8; layout.size as usize];
    let mut set = |i: usize, raw: &[u8]| {
        let o = layout.fields[index[i]].offset as usize;
        bytes[o..o + raw.len()].copy_from_slice(raw);
    };
    set(0, &(-2i8).to_ne_bytes());
    set(1, &(-300i16).to_ne_bytes());
    set(2, &(-70_000i32).to_ne_bytes());
    set(3, &i64::MIN.to_ne_bytes());
    set(4, &[0xff]);
    set(5, &0xfffeu16.to_ne_bytes());
    set(6, &0xffff_fffdu32.to_ne_bytes());
    set(7, &u64::MAX.to_ne_bytes());
    set(8, b"cat\0junk");
    set(9, b"ab\xffc"); // no NUL, invalid UTF-8
    set(10, &[2]);
    set(11, &1.5f64.to_bits().to_ne_bytes());
    let values: Vec<Value> = (0..types.len()).map(|i| decode::field_value(&bytes, &layout.fields[index[i]])).collect();
    assert_eq!(
        values,
        vec![
            Value::I(-2),
            Value::I(-300),
            Value::I(-70_000),
            Value::I(i64::MIN),
            Value::U(0xff),
            Value::U(0xfffe),
            Value::U(0xffff_fffd),
            Value::U(u64::MAX),
            Value::S("cat".into()),
            Value::S(r"ab\xffc".into()), // escaped reversibly (sink::escape_bytes)
            Value::B(true),
            Value::F(1.5),
        ]
    );
}

const TOP_FDS: &str = "SELECT fd, COUNT(*) AS n, COUNT(*) * 10 AS n10 FROM syscalls.sys_enter_pread64 GROUP BY fd \
                       HAVING COUNT(*) > 1 ORDER BY n DESC LIMIT 2";

/// Groups (fd, count) as the plan's inputs (key, count).
fn fd_counts(pairs: &[(u64, u64)]) -> Vec<Vec<Value>> {
    pairs.iter().map(|&(fd, n)| vec![Value::U(fd), Value::U(n)]).collect()
}

#[test]
fn apply_filters_projects_sorts_stably_and_limits() {
    let p = physical(TOP_FDS);
    assert_eq!(p.user.inputs.len(), 2, "{:?}", p.user.inputs);
    let out = apply(&p.user, fd_counts(&[(1, 5), (2, 1), (3, 9), (4, 5)]), true);
    assert_eq!(out, vec![vec![Value::U(3), Value::U(9), Value::U(90)], vec![Value::U(1), Value::U(5), Value::U(50)]]);
    // The same rows, kept as inputs: ORDER BY … LIMIT's state between polls.
    let top = top_inputs(&p.user, fd_counts(&[(1, 5), (2, 1), (3, 9), (4, 5)]), 2);
    assert_eq!(top, fd_counts(&[(3, 9), (1, 5)]));
}

#[test]
fn apply_without_order_by_sorts_groups_by_key_and_keeps_row_order() {
    let groups = physical("SELECT fd, COUNT(*) FROM syscalls.sys_enter_pread64 GROUP BY fd");
    let out = apply(&groups.user, fd_counts(&[(9, 1), (2, 3), (5, 2)]), true);
    assert_eq!(out, fd_counts(&[(2, 3), (5, 2), (9, 1)]));
    let out = apply(&groups.user, fd_counts(&[(9, 1), (2, 3), (5, 2)]), false);
    assert_eq!(out, fd_counts(&[(9, 1), (2, 3), (5, 2)]));
}

#[test]
fn syscall_names_come_from_the_bound_kernels_table_not_the_hosts() {
    let p = physical("SELECT syscall_name(id) AS name, COUNT(*) AS n FROM raw_syscalls.sys_enter GROUP BY id");
    // The fixture's unistd_64.h names 17 (pread64) but not 39, which every
    // x86_64 host header names getpid: a host table would say so.
    let out = apply(&p.user, vec![vec![Value::U(17), Value::U(2)], vec![Value::U(39), Value::U(1)]], true);
    assert_eq!(
        out,
        vec![vec![Value::S("pread64".into()), Value::U(2)], vec![Value::S("syscall_39".into()), Value::U(1)]]
    );
}

#[test]
fn sorted_rows_are_bounded_without_limit_and_compacted_with_one() {
    let unlimited = physical("SELECT fd FROM syscalls.sys_enter_pread64 ORDER BY fd");
    let row = |fd: u64| vec![Value::U(fd)];
    let mut held = SortedRows::default();
    held.push(&unlimited.user, (0..3).map(row).collect(), 3).unwrap();
    assert_eq!(held.held(), 3);
    let err = held.push(&unlimited.user, vec![row(3)], 3).unwrap_err().to_string();
    assert!(err.contains("more than 3 rows arrived"), "{err}");

    let limited = physical("SELECT fd FROM syscalls.sys_enter_pread64 ORDER BY fd DESC LIMIT 2");
    let mut held = SortedRows::default();
    held.push(&limited.user, (0..1023).map(row).collect(), 0).unwrap();
    assert_eq!(held.held(), 1023, "below 1024 rows nothing is compacted");
    held.push(&limited.user, vec![row(5000)], 0).unwrap();
    assert_eq!(held.take(), vec![row(5000), row(1022)]);
    assert_eq!(held.held(), 0);
}

#[test]
fn histogram_cells_round_trip_through_arrow_with_saturated_top_bounds() {
    let unsigned =
        Value::Hist(vec![Bucket { lo: 0, hi: 1, count: 4 }, Bucket { lo: 1i128 << 63, hi: 1i128 << 64, count: 1 }]);
    let signed = Value::Hist(vec![
        Bucket { lo: i128::from(i64::MIN), hi: 0, count: 2 },
        Bucket { lo: 1i128 << 62, hi: 1i128 << 63, count: 3 },
    ]);
    for (value, is_signed) in [(unsigned, false), (signed, true)] {
        let rows = vec![vec![value.clone()], vec![Value::Hist(vec![])]];
        let col = hist_column(&rows, 0, is_signed);
        assert_eq!(hist_cell(&col, 0), value);
        assert_eq!(hist_cell(&col, 1), Value::Hist(vec![]));
    }
}

#[test]
fn errno_names_are_given_per_group_and_other_numbers_stay_numbers() {
    let p = physical("SELECT errno_name(ret) AS err, COUNT(*) AS n FROM raw_syscalls.sys_exit GROUP BY ret");
    let out = apply(&p.user, vec![vec![Value::I(-2), Value::U(3)], vec![Value::I(0), Value::U(1)]], true);
    assert_eq!(out, vec![vec![Value::S("ENOENT".into()), Value::U(3)], vec![Value::S("0".into()), Value::U(1)]]);
}
