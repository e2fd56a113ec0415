//! `kstack` / `ustack`: stack ids from `bpf_get_stackid` into the
//! `ebq_stacks` stack-trace map; user space symbolizes them (runtime::stacks).

/// Most distinct stacks a query keeps (`ebq_stacks` entries).
pub const MAX_STACKS: u32 = 16384;

/// Frames per stack, the kernel's default `perf_event_max_stack`.
pub const MAX_DEPTH: u32 = 127;

/// The stack id of an empty stack: `bpf_get_stackid` answers -EFAULT when the
/// mode asked for has no frames — the kernel stack of a sample taken in user
/// mode, the user stack of a kernel thread. That is a valid key (a combined
/// user+kernel flame graph needs those samples), not a lost one; real ids are
/// below [`MAX_STACKS`], so this one cannot collide.
pub const EMPTY_STACK_ID: u32 = u32::MAX;

/// `-EFAULT`, what `bpf_get_stackid` returns for a stack with no frames.
const EFAULT: i32 = -14;

/// The map declaration and the lost-stack counter, emitted only when a program reads a stack.
pub fn map() -> String {
    format!(
        "/* Call stacks by id (kstack, ustack): {MAX_DEPTH} return addresses each, symbolized by ebq. */\n\
         struct {{\n\t__uint(type, BPF_MAP_TYPE_STACK_TRACE);\n\t__uint(max_entries, {MAX_STACKS});\n\
         \t__type(key, __u32);\n\t__type(value, __u64[{MAX_DEPTH}]);\n}} ebq_stacks SEC(\".maps\");\n\n{LOST}"
    )
}

/// An event whose stack could not be stored is dropped, and counted (any program may read a stack).
const LOST: &str = r#"/* bpf_get_stackid failed (map full, bucket taken by another stack):
 * the event is dropped and counted in dropped. */
static __always_inline int ebq_stack_lost(void)
{
	__u32 zero = 0;
	struct ebq_stats *stats = bpf_map_lookup_elem(&ebq_stats, &zero);

	if (stats)
		stats->dropped++;
	return 0;
}

"#;

/// C loading the stack id into `local`. An empty stack gets
/// [`EMPTY_STACK_ID`]; any other failure (map full, bucket taken) drops the
/// event and counts it in `dropped`, as a full group map does.
pub fn load(local: &str, user: bool) -> String {
    let flags = if user { "BPF_F_USER_STACK" } else { "0" };
    let id = format!(
        "\tlong {local}_id = bpf_get_stackid(ctx, &ebq_stacks, {flags});\n\
         \tif ({local}_id == {EFAULT})\t/* no frames in this mode: an empty stack, a valid key */\n\
         \t\t{local}_id = {EMPTY_STACK_ID:#x};\n\
         \telse if ({local}_id < 0)\n\t\treturn ebq_stack_lost();\n"
    );
    if user {
        format!("{id}\t__u64 {local} = (bpf_get_current_pid_tgid() >> 32 << 32) | (__u32){local}_id;\t/* tgid, stack id */\n")
    } else {
        format!("{id}\t__u64 {local} = (__u32){local}_id;\n")
    }
}
