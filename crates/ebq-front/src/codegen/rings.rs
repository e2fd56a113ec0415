//! Per-CPU ring buffers for row queries (`--rings per-cpu`, the default).
//!
//! ```text
//! before: struct ebq_row *r = bpf_ringbuf_reserve(&ebq_rows, …)          one ring, one spinlock
//! after:  void *ring = bpf_map_lookup_elem(&ebq_rows, &cpu);             ARRAY_OF_MAPS, slot = CPU
//!         struct ebq_row *r = bpf_ringbuf_reserve(ring, …)               each CPU its own ring
//! ```
//!
//! Why: a ring buffer's reserve takes the ring's spinlock; with several CPUs
//! emitting at once (fio with 4 jobs) they queue on it, and the reserve cost
//! grew from tens to hundreds of ns per event (issue 16). With one ring per
//! CPU the lock is only ever taken by one CPU (the program runs with
//! migration disabled), and the lookup of the CPU's ring is an inlined array
//! access.
//!
//! The rings are created by the runtime, one per possible CPU, and put in the
//! `ebq_rows` slots before the programs attach (the C declares the outer map
//! with one slot; the runtime sizes it). Every ring is `--ringbuf-size` big
//! ([`RowRings::bytes_per_cpu`]), not a share of it: a burst usually comes
//! from one thread on one CPU, and splitting 8 MiB between the CPUs halved
//! (on 2 CPUs) what that CPU could buffer while ebq caught up — 300,000
//! `pread64` rows in 0.1 s lost 30–50 % (issue 35 item 6). The cost is
//! memory: CPUs × the size (16 MiB here), charged to the memory cgroup
//! (kernel 6.18 no longer charges RLIMIT_MEMLOCK); lower `--ringbuf-size` on
//! a machine with many CPUs. User space drains every ring on each poll,
//! so what needs order does not depend on the rings: ORDER BY sorts, a stream
//! join puts rows in panes by their `time` and closes a pane only after all
//! rings were drained past it; a plain stream whose rows carry `time` gets
//! each poll's rows sorted by it ([`RowRings::time_offset`], the runtime's
//! `time_order`); without `time`, each CPU's rows in order, CPUs one after
//! another within a poll.

/// How the runtime sizes the per-CPU rings of a row program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRings {
    /// Each CPU's ring (`--ringbuf-size`: a power of two of at least a page,
    /// and at least 4× the wake-up threshold, which the plan clamps to a
    /// quarter of it).
    pub ring_bytes: u32,
    /// Offset of the record's `time` field (the event's `bpf_ktime_get_ns`),
    /// when it has one: the runtime sorts each poll's rows by it.
    pub time_offset: Option<u32>,
}

impl RowRings {
    /// The sizing for a plan's ring size.
    pub fn new(ring_bytes: u32) -> RowRings {
        RowRings { ring_bytes, time_offset: None }
    }

    /// Each ring's size with `cpus` CPUs: the whole `--ringbuf-size`, whatever
    /// the number of CPUs (one busy CPU can buffer as much as the shared ring).
    pub fn bytes_per_cpu(&self, _cpus: usize) -> u32 {
        self.ring_bytes
    }
}

/// The ring declarations: the outer ARRAY_OF_MAPS and its inner ring's type
/// (`bytes` is only the template's size: the kernel does not compare inner
/// rings' sizes, and the runtime makes each ring [`RowRings::bytes_per_cpu`]).
pub fn declarations(bytes: u32) -> String {
    format!(
        "/* One ring buffer per CPU: a CPU reserves in its own ring, so CPUs never wait on one ring's lock.\n \
         * ebq creates the rings at load (one per possible CPU) and fills the slots. */\n\
         struct ebq_ring {{\n\t__uint(type, BPF_MAP_TYPE_RINGBUF);\n\t__uint(max_entries, {bytes});\n}};\n\n\
         struct {{\n\t__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);\n\t__uint(max_entries, 1);\t/* set to the possible CPUs at load */\n\
         \t__type(key, __u32);\n\t__array(values, struct ebq_ring);\n}} ebq_rows SEC(\".maps\");\n\n"
    )
}

/// The wake-up decision with per-CPU rings: as the shared ring's, on the
/// CPU's own ring.
pub const WAKEUP_FLAG: &str = r#"/* A record's bytes in the ring buffer: the 8-byte header, rounded up to 8. */
#define EBQ_RECORD_BYTES(r) ((sizeof(r) + 8 + 7) & ~7ULL)

/* Wake the reader when the data waiting in this CPU's ring crosses a multiple of
 * EBQ_WAKEUP_BYTES: once per EBQ_WAKEUP_BYTES of rows, not on every row while the reader is
 * behind (each wake-up costs the traced thread about a microsecond; `ebq bench fidelity`). */
static __always_inline __u64 ebq_wakeup_flag(void *ring, __u64 record_bytes)
{
	__u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	__u64 before = avail > record_bytes ? avail - record_bytes : 0;

	return avail / EBQ_WAKEUP_BYTES != before / EBQ_WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

"#;

/// The statements reserving `r`, a `struct ebq_row`, counting a full ring as
/// dropped; with per-CPU rings `ring` is the CPU's ring afterwards.
pub fn reserve(per_cpu: bool) -> String {
    let full = "\tif (!r) {\n\t\tstats->dropped++;\t/* ring buffer full */\n\t\treturn 0;\n\t}\n";
    if per_cpu {
        format!(
            "\t__u32 ring_cpu = bpf_get_smp_processor_id();\n\
             \tvoid *ring = bpf_map_lookup_elem(&ebq_rows, &ring_cpu);\n\
             \tif (!ring) {{\n\t\tstats->dropped++;\t/* no ring for this CPU */\n\t\treturn 0;\n\t}}\n\
             \tstruct ebq_row *r = bpf_ringbuf_reserve(ring, sizeof(*r), 0);\n{full}"
        )
    } else {
        format!("\tstruct ebq_row *r = bpf_ringbuf_reserve(&ebq_rows, sizeof(*r), 0);\n{full}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codegen::tests::generate_with;
    use crate::plan::PlanOptions;

    #[test]
    fn every_cpus_ring_gets_the_whole_size() {
        let r = RowRings::new(8 << 20);
        assert_eq!((r.bytes_per_cpu(1), r.bytes_per_cpu(2), r.bytes_per_cpu(64)), (8 << 20, 8 << 20, 8 << 20));
        // A tiny ring (the overload tests): every CPU keeps a page.
        assert_eq!(RowRings::new(4096).bytes_per_cpu(2), 4096);
    }

    #[test]
    fn rows_reserve_in_the_cpus_ring_or_the_shared_one() {
        let sql = "SELECT time, pid, count FROM syscalls.sys_enter_pread64";
        let c = generate_with(sql, &PlanOptions::default());
        assert!(c.contains("__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);"), "{c}");
        assert!(c.contains("void *ring = bpf_map_lookup_elem(&ebq_rows, &ring_cpu);"), "{c}");
        assert!(c.contains("bpf_ringbuf_reserve(ring, sizeof(*r), 0)"), "{c}");
        assert!(c.contains("bpf_ringbuf_submit(r, ebq_wakeup_flag(ring, EBQ_RECORD_BYTES(*r)));"), "{c}");
        let shared = generate_with(sql, &PlanOptions { per_cpu_rings: false, ..Default::default() });
        assert!(shared.contains("bpf_ringbuf_reserve(&ebq_rows, sizeof(*r), 0)"), "{shared}");
        assert!(!shared.contains("ARRAY_OF_MAPS"), "{shared}");
    }
}
