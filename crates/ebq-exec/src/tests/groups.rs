//! Groups: per-CPU merge, panes combined, window reads through the map
//! seam, hidden COUNT(DISTINCT) keys, sliding and count windows.

use crate::decode::{self, Merged, Value};
use crate::fixture::{aggregate, bytes_of, physical};
use crate::group_rows::Group;
use crate::percpu_map::{FakeMap, PerCpuMap};
use crate::read_groups::{read_groups, GroupMaps};
use crate::window::{count_windows, SlidingPanes, WindowBounds};
use ebq_front::hist::Bucket;
use ebq_front::plan::{KernelOutput, PhysicalPlan, UserSource};

/// The value-layout field of user input `i` (a slot, an average's sum, a histogram, a sketch of registers).
fn slot_field(p: &PhysicalPlan, i: usize) -> usize {
    match p.user.inputs[i] {
        UserSource::Slot(f) | UserSource::Avg(f) | UserSource::Hist(f) | UserSource::Hll(f) => f,
        other => panic!("input {i} is {other:?}"),
    }
}

const STATS_SQL: &str = "SELECT cpu, COUNT(*), SUM(time), MIN(time), MAX(time), MIN(ret), MAX(ret), AVG(ret) \
                         FROM syscalls.sys_exit_pread64 GROUP BY cpu";

/// Per-CPU values of one group: [count, SUM(time), MIN(time), MAX(time), MIN(ret), MAX(ret), sum of ret] (ret is signed).
fn stats_value(p: &PhysicalPlan, cpu: [u64; 7]) -> Vec<u8> {
    let (_, value) = aggregate(p);
    let mut fields = vec![(0, cpu[0])];
    fields.extend((2..8).map(|i| (slot_field(p, i), cpu[i - 1])));
    bytes_of(value, &fields)
}

#[test]
fn per_cpu_values_merge_count_sum_min_max_avg_skipping_idle_cpus() {
    let p = physical(STATS_SQL);
    let (key, value) = aggregate(&p);
    let funcs = decode::slot_funcs(&p);
    let neg = |v: i64| v as u64;
    let per_cpu = vec![
        stats_value(&p, [2, 30, 10, 20, neg(-5), 7, 2]),
        // A CPU that saw no event of the group: its MIN slots were never set.
        stats_value(&p, [0, 0, 0, 0, 0, 0, 0]),
        stats_value(&p, [1, 4, 4, 4, neg(-9), neg(-1), neg(-1)]),
        stats_value(&p, [3, 600, 100, 300, 3, 50, 60]),
    ];
    let merged = decode::merge_percpu(value, &funcs, &per_cpu);
    assert_eq!(merged.count, 6);
    let UserSource::Key(cpu) = p.user.inputs[0] else { panic!("input 0 is the key") };
    let k = bytes_of(key, &[(cpu, 42)]);
    assert_eq!(
        decode::group_inputs(&p, key, &k, &merged, 0, None),
        vec![
            Value::U(42),
            Value::U(6),
            Value::U(634),
            Value::U(4),
            Value::U(300),
            Value::I(-9),
            Value::I(50),
            Value::F(61.0 / 6.0),
        ]
    );
}

#[test]
fn combine_adds_panes_keeps_extremes_and_ignores_empty_groups() {
    let p = physical(STATS_SQL);
    let (_, value) = aggregate(&p);
    let funcs = decode::slot_funcs(&p);
    let a = decode::merge_percpu(value, &funcs, &[stats_value(&p, [2, 30, 10, 20, (-5i64) as u64, 7, 2])]);
    let b = decode::merge_percpu(value, &funcs, &[stats_value(&p, [1, 4, 4, 4, (-9i64) as u64, (-1i64) as u64, 5])]);
    let mut total = Merged::default();
    decode::combine(&mut total, &Merged::default(), &funcs);
    assert_eq!(total.count, 0);
    decode::combine(&mut total, &a, &funcs);
    decode::combine(&mut total, &b, &funcs);
    decode::combine(&mut total, &Merged::default(), &funcs);
    assert_eq!(total.count, 3);
    let at = |i: usize| total.fields[slot_field(&p, i)].clone();
    assert_eq!(
        (2..8).map(at).collect::<Vec<_>>(),
        vec![Value::U(34), Value::U(4), Value::U(20), Value::I(-9), Value::I(7), Value::I(7)]
    );
}

#[test]
fn histogram_counters_merge_across_cpus_into_buckets_with_gaps() {
    let p = physical("SELECT HIST(count) FROM syscalls.sys_enter_pread64");
    let (key, value) = aggregate(&p);
    let funcs = decode::slot_funcs(&p);
    let f = &value.fields[slot_field(&p, 0)];
    // The kernel sums the argument beside the buckets (a hidden SUM slot).
    let [ebq_front::plan::Distribution::HistSum { sum, .. }] = p.user.distributions.as_slice() else { panic!() };
    let cpu = |count: u64, buckets: &[(usize, u64)], total: u64| {
        let mut b = bytes_of(value, &[(0, count), (*sum, total)]);
        for &(j, n) in buckets {
            let o = f.offset as usize + 8 * j;
            b[o..o + 8].copy_from_slice(&n.to_ne_bytes());
        }
        b
    };
    // Buckets 2 ([2,4)) and 5 ([16,32)); bucket 3 and 4 are gaps.
    let merged =
        decode::merge_percpu(value, &funcs, &[cpu(3, &[(2, 1), (5, 2)], 2 + 16 + 17), cpu(2, &[(2, 2)], 3 + 3)]);
    let k = vec![0; key.size as usize];
    assert_eq!(
        decode::group_inputs(&p, key, &k, &merged, 0, None),
        vec![
            Value::Hist(vec![
                Bucket { lo: 2, hi: 4, count: 3 },
                Bucket { lo: 4, hi: 8, count: 0 },
                Bucket { lo: 8, hi: 16, count: 0 },
                Bucket { lo: 16, hi: 32, count: 2 },
            ]),
            Value::U(41),
        ],
        "the histogram, then its exact sum (the row's extras)"
    );
}

#[test]
fn hll_registers_merge_by_maximum() {
    let p = physical("SELECT APPROX_COUNT_DISTINCT(fd) FROM syscalls.sys_enter_pread64");
    let (_, value) = aggregate(&p);
    let funcs = decode::slot_funcs(&p);
    let field = slot_field(&p, 0);
    let f = &value.fields[field];
    let ebq_front::types::DataType::Registers { len } = f.ty else { panic!("registers") };
    let cpu = |regs: &[(usize, u8)]| {
        let mut b = bytes_of(value, &[(0, 1)]);
        regs.iter().for_each(|&(r, v)| b[f.offset as usize + r] = v);
        b
    };
    let merged = decode::merge_percpu(value, &funcs, &[cpu(&[(0, 3), (5, 1)]), cpu(&[(0, 1), (5, 4), (7, 2)])]);
    let mut expected = vec![0u8; usize::from(len)];
    (expected[0], expected[5], expected[7]) = (3, 4, 2);
    assert_eq!(merged.registers.get(&field), Some(&expected));
}

/// A fake group map holding `(window, cpu) → per-CPU values` of [`STATS_SQL`] windowed.
fn windowed_groups(p: &PhysicalPlan, groups: &[(u64, u64, Vec<[u64; 7]>)]) -> FakeMap {
    let (key, _) = aggregate(p);
    let window = key.fields.iter().position(|f| f.name == "window").expect("a window field");
    let UserSource::Key(cpu) = p.user.inputs[0] else { panic!("input 0 is the key") };
    let map = FakeMap::default();
    for (w, f, cpus) in groups {
        let k = bytes_of(key, &[(window, *w), (cpu, *f)]);
        map.write_percpu(&k, &cpus.iter().map(|c| stats_value(p, *c)).collect::<Vec<_>>()).unwrap();
    }
    map
}

#[test]
fn reading_a_window_picks_its_groups_merges_them_and_clears_only_those() {
    let p = physical(&format!("{STATS_SQL} WINDOW(time, 1000, 500)"));
    let map = windowed_groups(
        &p,
        &[
            (0, 7, vec![[1, 5, 5, 5, 1, 1, 1], [2, 6, 1, 5, 2, 4, 6]]),
            (1, 7, vec![[1, 9, 9, 9, 0, 0, 0]]),
            (1, 8, vec![[4, 8, 2, 2, 2, 2, 8]]),
        ],
    );
    let maps = GroupMaps { groups: &map, single_slot: false, sketch: None, names: None };
    let w1 = read_groups(&p, &maps, |w| w == 1, true).unwrap();
    assert_eq!(w1.iter().map(|(w, _, m)| (*w, m.count)).collect::<Vec<_>>(), vec![(1, 1), (1, 4)]);
    assert_eq!(map.borrow().len(), 1, "window 0 stays");
    let w0 = read_groups(&p, &maps, |_| true, false).unwrap();
    assert_eq!(w0.iter().map(|(w, _, m)| (*w, m.count)).collect::<Vec<_>>(), vec![(0, 3)]);
    assert_eq!(w0[0].2.fields[slot_field(&p, 2)], Value::U(11));
    assert_eq!(map.borrow().len(), 1, "a snapshot deletes nothing");
}

#[test]
fn a_single_slot_reads_as_window_zero_and_clears_to_zeros() {
    let p = physical("SELECT COUNT(*), SUM(count) FROM syscalls.sys_enter_pread64");
    let (key, value) = aggregate(&p);
    let sum = slot_field(&p, 1);
    let map = FakeMap::default();
    let slot = 0u32.to_ne_bytes().to_vec();
    map.write_percpu(&slot, &[bytes_of(value, &[(0, 2), (sum, 10)]), bytes_of(value, &[(0, 1), (sum, 5)])]).unwrap();
    let maps = GroupMaps { groups: &map, single_slot: true, sketch: None, names: None };
    let groups = read_groups(&p, &maps, |_| true, true).unwrap();
    assert_eq!(groups.len(), 1);
    let (w, k, m) = &groups[0];
    assert_eq!((*w, k.clone(), m.count, m.fields[sum].clone()), (0, vec![0; key.size as usize], 3, Value::U(15)));
    assert_eq!(map.borrow()[&slot], vec![vec![0; value.size as usize]; 2], "cleared, not deleted");
    assert!(read_groups(&p, &maps, |_| true, true).unwrap().is_empty(), "a zero slot is no group");
}

#[test]
fn quantile_sketch_entries_add_to_their_groups_buckets() {
    let p = physical("SELECT fd, P50(count) FROM syscalls.sys_enter_pread64 GROUP BY fd");
    let (key, _) = aggregate(&p);
    let UserSource::Key(fd) = p.user.inputs[0] else { panic!("input 0 is the key") };
    let groups = FakeMap::default();
    let k = bytes_of(key, &[(fd, 3)]);
    groups.write_percpu(&k, &[bytes_of(aggregate(&p).1, &[(0, 4)])]).unwrap();
    let sketch = FakeMap::default();
    let entry = |group: &[u8], agg: u32, bucket: i32| [group, &agg.to_ne_bytes(), &bucket.to_ne_bytes()].concat();
    sketch.write_percpu(&entry(&k, 0, 12), &[3u64.to_ne_bytes().to_vec(), 1u64.to_ne_bytes().to_vec()]).unwrap();
    // Another group's entry (a window not read) is left alone.
    let other = bytes_of(key, &[(fd, 4)]);
    sketch.write_percpu(&entry(&other, 0, 12), &[9u64.to_ne_bytes().to_vec()]).unwrap();
    let maps = GroupMaps { groups: &groups, single_slot: false, sketch: Some(&sketch), names: None };
    let read = read_groups(&p, &maps, |_| true, true).unwrap();
    assert_eq!(
        read[0].2.buckets.iter().map(|(k, n)| (*k, *n)).collect::<Vec<_>>(),
        vec![((decode::Store::Sketch(0), 12), 4)]
    );
    assert_eq!(sketch.all_keys(), vec![entry(&other, 0, 12)]);
}

#[test]
fn group_rows_combine_panes_and_count_hidden_distinct_keys() {
    let p = physical(
        "SELECT comm, COUNT(*), COUNT(DISTINCT fd) FROM syscalls.sys_enter_pread64 GROUP BY comm WINDOW(time, 1000, 500)",
    );
    let KernelOutput::Aggregate { key, value, key_fields, .. } = &p.programs[0].output else { panic!("aggregate") };
    let (comm, fd) = (key_fields[0].1, key_fields[1].1);
    let window = key.fields.iter().position(|f| f.name == "window").unwrap();
    let group = |w: u64, name: &[u8], f: u64, count: u64| {
        let mut k = bytes_of(key, &[(window, w), (fd, f)]);
        let o = key.fields[comm].offset as usize;
        k[o..o + name.len()].copy_from_slice(name);
        (k, decode::merge_percpu(value, &decode::slot_funcs(&p), &[bytes_of(value, &[(0, count)])]))
    };
    // "cat" read fd 3 in both panes and fd 4 in one; "dd" read fd 3 once.
    let groups = vec![group(0, b"cat", 3, 2), group(1, b"cat", 3, 1), group(1, b"cat", 4, 5), group(0, b"dd", 3, 1)];
    let mut rows = crate::group_rows::group_rows(&p, groups);
    rows.sort_by(|a, b| a[0].cmp_for_sort(&b[0]));
    assert_eq!(
        rows,
        vec![
            vec![Value::S("cat".into()), Value::U(8), Value::U(2)],
            vec![Value::S("dd".into()), Value::U(1), Value::U(1)],
        ]
    );
}

#[test]
fn a_sliding_window_is_its_last_panes_and_spans_them() {
    let one = |n: u64| (vec![n as u8], Merged { count: n, ..Merged::default() });
    let pane = |i: u64| WindowBounds::Time { start_ns: i * 10, end_ns: (i + 1) * 10 };
    let mut sliding = SlidingPanes::default();
    let counts = |g: &[Group]| g.iter().map(|(_, m)| m.count).collect::<Vec<_>>();
    let (w, g) = sliding.close(3, pane(0), vec![one(1)]);
    assert_eq!((w, counts(&g)), (WindowBounds::Time { start_ns: 0, end_ns: 10 }, vec![1]));
    sliding.close(3, pane(1), vec![one(2), one(3)]);
    sliding.close(3, pane(2), vec![]);
    let (w, g) = sliding.close(3, pane(3), vec![one(4)]);
    assert_eq!((w, counts(&g)), (WindowBounds::Time { start_ns: 10, end_ns: 40 }, vec![2, 3, 4]));
    // A tumbling window is the pane alone and keeps nothing.
    let mut tumbling = SlidingPanes::default();
    tumbling.close(1, pane(0), vec![one(1)]);
    let (w, g) = tumbling.close(1, pane(1), vec![one(5)]);
    assert_eq!((w, counts(&g)), (pane(1), vec![5]));
}

#[test]
fn count_windows_are_emitted_in_order_empty_ones_included() {
    let g = |w: u64, n: u64| (w, vec![n as u8], Merged { count: n, ..Merged::default() });
    let summary = |out: Vec<(u64, Vec<Group>)>| {
        out.into_iter().map(|(i, g)| (i, g.iter().map(|(_, m)| m.count).collect())).collect::<Vec<(u64, Vec<u64>)>>()
    };
    let (out, next) = count_windows(vec![g(2, 7), g(4, 1), g(4, 2)], 2, 5);
    assert_eq!(summary(out), vec![(2, vec![7]), (3, vec![]), (4, vec![1, 2])]);
    assert_eq!(next, 5);
    // At the end: through the last window that has a group.
    let (out, next) = count_windows(vec![g(6, 3)], 5, u64::MAX);
    assert_eq!((summary(out), next), (vec![(5, vec![]), (6, vec![3])], 7));
    let (out, next) = count_windows(vec![], 5, u64::MAX);
    assert_eq!((summary(out), next), (vec![], 5));
}

/// Names late: the kernel's groups are keyed by identities; reading puts the
/// names back (from `ebq_names`, drained into the cache) and groups whose
/// names coincide — two dentries named alike — become one row.
#[test]
fn groups_keyed_by_identities_read_back_with_their_names_and_merge_by_name() {
    let sql = "SELECT file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY file_name";
    let mut p = physical(sql);
    p.programs[0].typed_files = true; // as on a kernel with bpf_rdonly_cast
    ebq_front::plan::late_names::apply(&mut p.programs[0]);
    let KernelOutput::Aggregate { key, value, key_fields, .. } = &p.programs[0].output else { panic!() };
    let field = key_fields[0].1;
    let groups = FakeMap::default();
    for (dentry, cpus) in [(0xa0u64, [3u64, 1]), (0xb0, [2, 0]), (0xc0, [5, 5]), (0, [1, 0])] {
        let k = bytes_of(key, &[(field, dentry)]);
        groups.write_percpu(&k, &cpus.iter().map(|c| bytes_of(value, &[(0, *c)])).collect::<Vec<_>>()).unwrap();
    }
    // Names by (kind 3 = file_name, dentry), one copy per CPU: the writer's CPU holds it.
    let names = FakeMap::default();
    let name = |s: &str| {
        let mut b = vec![0u8; 64];
        b[..s.len()].copy_from_slice(s.as_bytes());
        b
    };
    for (dentry, copies) in
        [(0xa0u64, [name("data"), name("")]), (0xb0, [name(""), name("data")]), (0xc0, [name("log"), name("")])]
    {
        let mut k = vec![0u8; 16];
        k[..4].copy_from_slice(&3u32.to_ne_bytes());
        k[8..].copy_from_slice(&dentry.to_ne_bytes());
        names.write_percpu(&k, &copies).unwrap();
    }
    let cache = std::cell::RefCell::new(Default::default());
    let maps = GroupMaps { groups: &groups, single_slot: false, sketch: None, names: Some((&names, &cache)) };
    let read = read_groups(&p, &maps, |_| true, true).unwrap();
    assert!(names.borrow().is_empty(), "names are drained into the cache");
    assert_eq!(cache.borrow().len(), 3);
    let mut rows = crate::group_rows::group_rows(&p, read.into_iter().map(|(_, k, m)| (k, m)));
    rows.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(
        rows,
        vec![
            vec![Value::S("".into()), Value::U(1)],
            vec![Value::S("data".into()), Value::U(6)],
            vec![Value::S("log".into()), Value::U(10)],
        ]
    );
}

/// Issue 38: a late name is escaped once, like a string read in place: a
/// backslash doubled, an invalid byte `\xHH`, and a name the kernel cut at
/// 63 bytes inside a character keeps the bytes it has (each shown as `\xHH`).
#[test]
fn late_names_are_escaped_once_and_a_cut_character_keeps_its_bytes() {
    let sql = "SELECT file_name, COUNT(*) FROM syscalls.sys_enter_read GROUP BY file_name";
    let mut p = physical(sql);
    p.programs[0].typed_files = true;
    ebq_front::plan::late_names::apply(&mut p.programs[0]);
    let KernelOutput::Aggregate { key, value, key_fields, .. } = &p.programs[0].output else { panic!() };
    let field = key_fields[0].1;
    // 61 ASCII bytes, then the first two bytes of "€" (e2 82 ac): the kernel's 63 of 64.
    let cut: Vec<u8> = [vec![b'a'; 61], vec![0xe2, 0x82]].concat();
    let raw: [(u64, &[u8]); 4] = [(0xa0, b"back\\slash.txt"), (0xb0, b"bad\xffname"), (0xc0, b"q\"uote"), (0xd0, &cut)];
    let groups = FakeMap::default();
    let names = FakeMap::default();
    for (dentry, name) in raw {
        let k = bytes_of(key, &[(field, dentry)]);
        groups.write_percpu(&k, &[bytes_of(value, &[(0, 1)])]).unwrap();
        let mut copy = vec![0u8; 64];
        copy[..name.len()].copy_from_slice(name);
        let mut k = vec![0u8; 16];
        k[..4].copy_from_slice(&3u32.to_ne_bytes());
        k[8..].copy_from_slice(&dentry.to_ne_bytes());
        names.write_percpu(&k, &[copy]).unwrap();
    }
    let cache = std::cell::RefCell::new(Default::default());
    let maps = GroupMaps { groups: &groups, single_slot: false, sketch: None, names: Some((&names, &cache)) };
    let read = read_groups(&p, &maps, |_| true, true).unwrap();
    let mut shown: Vec<Value> = crate::group_rows::group_rows(&p, read.into_iter().map(|(_, k, m)| (k, m)))
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    shown.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    let cut_shown = format!("{}\\xe2\\x82", "a".repeat(61));
    assert_eq!(
        shown,
        [
            Value::S(cut_shown),
            Value::S("back\\\\slash.txt".into()),
            Value::S("bad\\xffname".into()),
            Value::S("q\"uote".into()),
        ]
    );
}
