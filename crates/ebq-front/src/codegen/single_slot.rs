//! C for single-slot aggregates (no GROUP BY, no window; `plan::single_slot`):
//! the group's value is slot 0 of a one-entry per-CPU array, looked up with
//! the `zero` key the stats lookup already declares. The verifier inlines the
//! lookup; a slot starts zeroed (count 0), which is what a new hash entry was
//! filled with, so there is no insert path, no `ebq_zero` map and nothing to drop.

/// The group map: one per-CPU slot.
pub const MAP: &str = "/* No GROUP BY, no window: one group, in slot 0 of a per-CPU array (the verifier inlines\n \
     * its lookup). A slot starts zeroed; count 0 means this CPU has seen no event yet. */\n\
     struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\
     \t__type(value, struct ebq_value);\n} ebq_groups SEC(\".maps\");\n\n";

/// The lookup in the program (slot 0 always exists; the check is for the verifier).
pub const LOOKUP: &str =
    "\tstruct ebq_value *v = bpf_map_lookup_elem(&ebq_groups, &zero);\n\tif (!v)\n\t\treturn 0;\t/* never: slot 0 always exists */\n";

#[cfg(test)]
mod tests {
    use crate::codegen::tests::{assert_snapshot, generate_for};

    /// The generated C of a keyless aggregate (one array slot), compared with a
    /// checked-in snapshot (EBQ_UPDATE_SNAPSHOTS=1 rewrites it).
    #[test]
    fn keyless_snapshot() {
        let c = generate_for(
            "SELECT COUNT(*), SUM(count), MIN(count), MAX(count), HIST(count) FROM syscalls.sys_enter_pread64 \
             WHERE comm = 'dd'",
        );
        assert_snapshot("keyless.bpf.c", &c);
    }
}
