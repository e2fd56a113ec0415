//! Strings in user memory as C: `execve`'s `argv` joined into one string.

/// The loop, with `LOCAL`, `NAME`, `CAP`, `MAX`, `LAST`, `STARTS` and `MASK` to fill in.
const ARGV: &str = r#"	__builtin_memset(LOCAL, 0, CAP + SLACK);	/* CAP used; SLACK of slack for the last entry's read */
	{	/* NAME: the first MAX entries joined by spaces, then where entries 1.. start */
		const char *const *av = (const char *const *)ctx->NAME;
		__u64 starts = 0;	/* byte i-1: where entry i starts */
		__u32 at = 0;
		long failed = 0;	/* a read of the array or of an entry failed: NULL */

		for (int i = 0; i < MAX && av; i++) {
			const char *p = 0;

			failed = bpf_probe_read_user(&p, sizeof(p), &av[i]);
			if (failed || !p)
				break;
			long n = bpf_probe_read_user_str(&LOCAL[at & MASK], 64, p);
			if (n < 0)
				failed = n;
			if (n <= 0 || n > 64)
				break;
			if (i > 0)
				starts |= (__u64)at << ((i - 1) * 8);
			at += n;
			if (at > LAST)
				break;
			LOCAL[(at - 1) & MASK] = ' ';
		}
		if (at > 0 && at <= LAST)
			LOCAL[(at - 1) & MASK] = 0;
		LOCAL[LAST] = 0;
		__builtin_memcpy(&LOCAL[STARTS], &starts, 8);
		if (failed) {
			LOCAL[0] = 0;
			ebq_user_str_read(LOCAL, failed);
		}
	}
"#;

/// C statements joining the user array of strings `ctx->name` into `local`
/// (`cap` bytes): its first [`crate::bind::ARGV_MAX_ARGS`] entries separated
/// by spaces, each cut at 63 bytes, the whole at `cap` - 9 and a NUL; then,
/// in the last 8 bytes, where entries 1..=7 start (one byte each, 0 for none),
/// so user space can quote each entry (`ebq_exec::argv`): the spaces alone
/// do not say whether `a b` was one entry or two. The joined text stays a C
/// string, which LIKE filters in the kernel. Each entry is read with a
/// constant size (64) at a masked offset into a buffer with 64 bytes of
/// slack: a read of the remaining length would be a variable size at a
/// variable offset, which the verifier cannot bound. The stack budget counts
/// nothing: `local` is the column's field in the per-CPU string scratch, not
/// the stack (`plan::scratch_bytes`), `cap` bytes and the slack.
/// A read that fails (the array or an entry in a page not resident at the
/// entry, a bad pointer: execve then fails with EFAULT) makes the whole
/// `argv` NULL and is counted (`ebq_user_str_read`): the entries before it
/// alone would read as a shorter command line. A NULL `argv`, which Linux
/// takes as no arguments, is an empty string.
pub fn argv(local: &str, name: &str, cap: u32) -> String {
    let mask = cap.next_power_of_two() - 1;
    let starts = cap - crate::bind::ARGV_STARTS_BYTES;
    ARGV.replace("LOCAL", local)
        .replace("NAME", name)
        .replace("CAP", &cap.to_string())
        .replace("SLACK", &crate::bind::ARGV_SLACK_BYTES.to_string())
        .replace("MAX", &crate::bind::ARGV_MAX_ARGS.to_string())
        .replace("LAST", &(starts - 1).to_string())
        .replace("STARTS", &starts.to_string())
        .replace("MASK", &mask.to_string())
}
