//! `env_int('NAME', …)` in the kernel: a number from the current process's
//! environment, read at the event, so it is known for a process that exits
//! before user space could read `/proc/PID/environ` (an MPI rank of a short
//! job, `ebq report io -c mpiexec …`).
//!
//! The environment is the NUL-separated block `mm->env_start..env_end` in the
//! process's memory. `bpf_loop` walks it one variable a step (the verifier
//! checks the step once, not once per variable): a `bpf_probe_read_user_str`
//! of [`ENV_INT_CHUNK`] bytes into a per-CPU scratch, and a branch-free
//! compare of its head with each `NAME=`. A variable longer than a read takes
//! more steps and is not compared again mid-way. Only the matched variable's
//! digits are read again and parsed, once, after the walk.

use super::{map_info, Layout, MapInfo, MapRole};
use crate::bind::{ScalarExpr, ENV_INT_CHUNK, ENV_INT_VARS};
use crate::plan::KernelPlan;
use std::fmt::Write;

/// The scratch map's name.
pub const SCRATCH: &str = "ebq_env_scratch";

/// The C name of the function computing `env_int(names)`.
pub fn function_name(names: &[String]) -> String {
    format!("ebq_env_int__{}", names.join("__"))
}

/// The scratch, the shared parts and one walker per list of names, when a
/// program of `k` calls `env_int`; empty otherwise.
pub fn functions(k: &KernelPlan, maps: &mut Vec<MapInfo>) -> String {
    let mut lists: Vec<Vec<String>> = vec![];
    k.visit_exprs(&mut |e| {
        e.visit(&mut |x| {
            if let ScalarExpr::EnvInt(names) = x {
                if !lists.contains(names) {
                    lists.push(names.clone());
                }
            }
        })
    });
    if lists.is_empty() {
        return String::new();
    }
    maps.push(map_info(SCRATCH, MapRole::EnvScratch, Layout::U32, Layout::Bytes(ENV_INT_CHUNK as u32)));
    let mut c = format!(
        r#"/* env_int(): the environment block of the current process, and a per-CPU scratch each
 * variable's first {chunk} bytes are read into to be compared with the names looked for. */
struct mm_struct___ebq_env {{
	unsigned long env_start;
	unsigned long env_end;
}} __attribute__((preserve_access_index));

struct task_struct___ebq_env {{
	struct mm_struct___ebq_env *mm;
}} __attribute__((preserve_access_index));

{scratch}
/* The decimal number at `addr` (a variable's value), -1 when it starts with no digit. */
static __always_inline __s64 ebq_env_number(__u64 addr)
{{
	char d[24] = {{}};
	__s64 v = 0;

	if (bpf_probe_read_user_str(d, sizeof(d), (const void *)addr) <= 1)
		return -1;
	for (int i = 0; i < 20; i++) {{
		if (d[i] < '0' || d[i] > '9')
			return i ? v : -1;
		v = v * 10 + (d[i] - '0');
	}}
	return v;
}}

"#,
        chunk = ENV_INT_CHUNK,
        scratch = super::one_slot_per_cpu(SCRATCH, &format!("char[{ENV_INT_CHUNK}]")),
    );
    for names in &lists {
        c.push_str(&walker(names));
    }
    c
}

/// The walk for one list of names: its state, its step and the function the
/// expression calls, which returns the first name's number that is set.
fn walker(names: &[String]) -> String {
    let f = function_name(names);
    let chunk = ENV_INT_CHUNK;
    let mut compares = String::new();
    for (i, name) in names.iter().enumerate() {
        let head: Vec<String> =
            format!("{name}=").bytes().enumerate().map(|(k, b)| format!("(s[{k}] ^ '{}')", b as char)).collect();
        let _ = write!(
            compares,
            "\t\t/* {name}= */\n\t\tif (!w->found[{i}] && !({}))\n\t\t\tw->found[{i}] = w->at + {};\n",
            head.join(" | "),
            name.len() + 1
        );
    }
    let picks: String =
        (0..names.len()).map(|i| format!("\tif (w.found[{i}])\n\t\treturn ebq_env_number(w.found[{i}]);\n")).collect();
    format!(
        r#"/* env_int({quoted}): where each name's value starts in the environment (0: not seen). */
struct {f}_walk {{
	__u64 at;
	__u64 end;
	__u64 found[{n}];
	int inside;	/* this read continues a variable longer than the last read */
}};

static long {f}_step(__u32 i, void *ctx)
{{
	struct {f}_walk *w = ctx;
	__u32 zero = 0;
	char *s = bpf_map_lookup_elem(&{SCRATCH}, &zero);
	long n;

	if (!s || w->at >= w->end)
		return 1;
	n = bpf_probe_read_user_str(s, {chunk}, (const void *)w->at);
	if (n <= 0)
		return 1;
	if (!w->inside) {{
{compares}	}}
	w->inside = n == {chunk};
	w->at += n == {chunk} ? {chunk} - 1 : n;
	return 0;
}}

static __always_inline __s64 {f}(void)
{{
	struct task_struct___ebq_env *task = (void *)bpf_get_current_task_btf();
	struct {f}_walk w = {{ .at = task->mm->env_start, .end = task->mm->env_end }};

	bpf_loop({vars}, {f}_step, &w, 0);
{picks}	return -1;
}}

"#,
        quoted = names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", "),
        n = names.len(),
        vars = ENV_INT_VARS,
    )
}
