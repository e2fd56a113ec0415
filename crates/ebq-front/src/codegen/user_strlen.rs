//! `user_strlen(ptr)` in the kernel: one function and its per-CPU scratch in
//! the object's prelude when a program uses it.
//!
//! `bpf_probe_read_user_str` returns the bytes it copied with the NUL, so a
//! string's length is one helper call per chunk of [`USER_STRLEN_CHUNK`]
//! bytes into a scratch that is never read: a 201-byte line costs one call,
//! a 4 KiB one two. The scratch is a per-CPU array (4 KiB does not fit the
//! 512-byte stack). A string of [`USER_STRLEN_CAP`] bytes or more gives the
//! cap, which the caller can tell from an exact length; an address that
//! faults gives what was measured before it and counts in
//! `unreadable_strings`, as a string column's read does.

use super::{map_info, Layout, MapInfo, MapRole};
use crate::bind::{ScalarExpr, USER_STRLEN_CHUNK, USER_STRLEN_CHUNKS};
use crate::plan::KernelPlan;

/// The scratch map's name.
pub const SCRATCH: &str = "ebq_strlen_scratch";

/// The map and the function, when a program of `k` calls `user_strlen`; empty otherwise.
pub fn functions(k: &KernelPlan, maps: &mut Vec<MapInfo>) -> String {
    let mut used = false;
    k.visit_exprs(&mut |e| e.visit(&mut |x| used |= matches!(x, ScalarExpr::UserStrlen(_))));
    if !used {
        return String::new();
    }
    maps.push(map_info(SCRATCH, MapRole::StrlenScratch, Layout::U32, Layout::Bytes(USER_STRLEN_CHUNK as u32)));
    format!(
        r#"/* user_strlen(): a string's length, one bpf_probe_read_user_str per {chunk}-byte chunk into a
 * per-CPU scratch that is never read; {chunks} chunks at most, so a string of {cap} bytes or more
 * gives {cap}. A fault gives the length before it and counts as an unreadable string. */
{scratch}
static __always_inline __u64 ebq_user_strlen(__u64 addr)
{{
	__u32 zero = 0;
	char *buf = bpf_map_lookup_elem(&{SCRATCH}, &zero);
	__u64 len = 0;

	if (!buf)
		return 0;
	for (int i = 0; i < {chunks}; i++) {{
		long n = bpf_probe_read_user_str(buf, {chunk}, (const void *)(addr + len));

		if (n < 0) {{
			ebq_user_str_read(buf, n);	/* counts it in unreadable_strings */
			return len;
		}}
		if (n < {chunk})
			return len + (n > 0 ? n - 1 : 0);
		len += {chunk} - 1;
	}}
	return len;
}}

"#,
        chunk = USER_STRLEN_CHUNK,
        chunks = USER_STRLEN_CHUNKS,
        cap = crate::bind::USER_STRLEN_CAP,
        scratch = super::one_slot_per_cpu(SCRATCH, &format!("char[{USER_STRLEN_CHUNK}]")),
    )
}
