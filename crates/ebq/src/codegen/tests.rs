use crate::catalog::Catalog;
use crate::plan::{plan, PlanOptions};

fn fixtures() -> Catalog {
    Catalog::at(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/formats"))
}

fn generate_for(sql: &str) -> String {
    let cat = fixtures();
    let q = crate::parse::parse_query(sql).unwrap();
    let l = crate::bind::bind(&q, &cat).unwrap();
    let p = plan(sql, &l, &cat, &PlanOptions::default()).unwrap();
    super::generate(&p)
}

#[test]
fn ebql_example_uses_one_map_lookup_for_all_aggregates() {
    let c = generate_for(
        "SELECT fd, cpu, COUNT(*), MAX(count), AVG(count) FROM tracepoint/syscalls/sys_enter_pread64 GROUP BY fd, cpu WHERE pid == 42 WINDOW(time, 1000, 1000)",
    );
    assert_eq!(c.matches("bpf_map_lookup_elem(&ebq_groups").count(), 2, "one lookup, one retry after insert");
    assert!(c.contains("\t__u64 fd;\t/* offset 16, size 8: unsigned int */"), "{c}");
    assert!(c.contains("if (!((__u64)sys_pid == (__u64)42ULL))"), "{c}");
    assert!(c.contains("key.window = ebq_window;"));
    assert!(c.contains("v->max_0 = x;") || c.contains("v->max_1 = x;"), "{c}");
}

#[test]
fn string_filters_compare_bytes() {
    let c = generate_for("SELECT COUNT(*) FROM syscalls.sys_enter_pread64 WHERE comm = 'dd' OR comm LIKE 'ab%'");
    assert!(c.contains("(sys_comm[0] == 'd' && sys_comm[1] == 'd' && sys_comm[2] == 0)"), "{c}");
    assert!(c.contains("(sys_comm[0] == 'a' && sys_comm[1] == 'b')"), "{c}");
}

#[test]
fn rows_use_the_ring_buffer() {
    let c = generate_for("SELECT time, pid, comm, fd, count FROM syscalls.sys_enter_pread64");
    assert!(c.contains("bpf_ringbuf_reserve(&ebq_rows, sizeof(*r), 0)"));
    assert!(c.contains("__builtin_memcpy(r->"));
}
