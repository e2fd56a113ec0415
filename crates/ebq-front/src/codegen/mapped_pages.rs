//! `pages_mapped` at `filemap:mm_filemap_map_pages` (fault-around): the pages
//! one call mapped into the process ([`FileColumn::PagesMapped`]).
//!
//! Fault-around maps the cached pages around a faulting address without a
//! fault for each, and maps the faulting page itself when it is cached: no
//! `filemap_fault` runs, so the fault event never sees those pages. The
//! tracepoint names only the window walked, and the count the kernel adds is
//! a local (`rss` in `filemap_map_pages`). What it moves is the process's
//! file-page counter, `mm->rss_stat[MM_FILEPAGES]`: a per-CPU counter, whose
//! exact value is its shared count plus every CPU's share. The programs read
//! that value at each fault of a thread (user and kernel mode, before the
//! kernel handles it) and at each fault-around, and the difference at a
//! fault-around is what it mapped; the fault-around keeps its reading too, as
//! a fault that is retried may map around again.
//!
//! A page that is not cached is a filemap fault's (`retry = 0` counts it), which
//! reads it, drops the mmap lock and makes the fault run again; that second
//! pass usually maps the page by fault-around, now that it is cached. So a
//! fault-around does not count the page of its own fault's first filemap
//! fault (a third program notes it at `mm_filemap_fault`). When it did not
//! map that page after all, the fault reaches `filemap_fault` a second time
//! and maps it there: the `retry` column then says 0, so the page counts once.
//! That hand-back needs both columns in one object (io.ops has them); run as
//! two queries, `mmap-faults` and `mmap-faultaround` miss such a page (the
//! pass's folio was locked by someone else: rare).
//!
//! A filemap fault's own page is its `mm_filemap_fault` row's, but the fault
//! maps it later, in `finish_fault`, and maps a large folio whole there (Linux
//! 6.11 on): a write fault, which takes no fault-around, on a cached file
//! read ahead in large folios brings in up to a folio per fault. No tracepoint
//! after that point names the file; `kmem:rss_stat` fires where the counter
//! moves. A fourth program runs there first (when a query is at that event)
//! and tells the changes apart by the thread's RCU read-lock nesting over the
//! fault's start: the first change after a filemap fault of this pass, at
//! most [`crate::plan::KernelPlan::finish_depth`] levels deeper, is the
//! fault's finish; a change one level shallower than fault-around's own
//! tracepoint (which a fifth program learns there) is a fault-around that
//! mapped a PMD-size folio with one PMD and so returned before that
//! tracepoint; any other (a page-table fault-around, counted at its own
//! event; anonymous memory) is not the fault's. It leaves the pages mapped,
//! less the page the fault's row counted, and the fault's file and page,
//! which the query's program there reads as `pages_mapped`, `fault_index`
//! and the file columns.
//!
//! The CPUs' shares sit at the counter's per-CPU address plus each CPU's
//! per-CPU offset, which the kernel keeps in `__per_cpu_offset`, a symbol
//! neither this kernel's BTF nor its kallsyms name. A per-CPU map has the same
//! offsets: its value's address on a CPU less its per-CPU base
//! (`bpf_array.pptrs[0]`) is that CPU's offset. Reading a pointer's value is
//! allowed to privileged programs (ebq runs as root).
//!
//! [`FileColumn::PagesMapped`]: crate::catalog::FileColumn::PagesMapped

use super::contract::{AttachPoint, ProgInfo};

/// The counting programs: their names, the tracepoints they attach to as
/// `tp_btf`, and what they call. A user-mode fault and a kernel-mode one
/// (`read` into a mapped buffer) both may fault around.
pub const PROGRAMS: [(&str, &str, &str); 3] = [
    ("ebq_count_at_user_fault", "exceptions:page_fault_user", "ebq_count_file_pages(ctx[0])"),
    ("ebq_count_at_kernel_fault", "exceptions:page_fault_kernel", "ebq_count_file_pages(ctx[0])"),
    ("ebq_note_at_filemap_fault", "filemap:mm_filemap_fault", "ebq_note_filemap_fault(ctx[0], ctx[1])"),
];

/// For queries at `kmem:rss_stat`: the program there that tells a fault's
/// mapping of its pages (attached before the query's program there, so that
/// it runs first), and the one at fault-around's tracepoint that learns how
/// deep in the RCU read lock fault-around runs.
pub const FINISH_PROGRAMS: [(&str, &str, &str); 2] = [
    ("ebq_count_at_finish", "kmem:rss_stat", "ebq_count_finished_pages(ctx[0], ctx[1])"),
    ("ebq_learn_at_fault_around", "filemap:mm_filemap_map_pages", "ebq_learn_around_depth()"),
];

/// The counting programs, [`FINISH_PROGRAMS`] too when `finish`.
fn programs_of(finish: bool) -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    PROGRAMS.iter().chain(FINISH_PROGRAMS.iter().filter(move |_| finish))
}

/// The counting programs' contract entries: attached before the query's, so that a
/// fault-around finds its thread's count.
pub fn progs(finish: bool) -> Vec<ProgInfo> {
    programs_of(finish)
        .map(|(name, tracepoint, _)| ProgInfo { name, attach: AttachPoint::FaultCount(tracepoint) })
        .collect()
}

/// The maps and helpers; after the scope helpers.
pub const PRELUDE: &str = r#"/* pages_mapped, one per thread: the process's file pages (mm->rss_stat[MM_FILEPAGES]) when the
 * thread last faulted or faulted around (`counted` 0: not yet since the query attached), and the
 * page of the current fault's first filemap fault, which counted it. */
#define EBQ_PAGES_MAPPED 1

struct ebq_file_count {
	__s64 pages;
	__u64 counted;
	__u64 mapping;
	__u64 index;
	__u32 faulted;		/* a filemap fault came in this fault: mapping, index */
	__u32 discounted;	/* a fault-around did not count that page as it had been */
	__u32 finishing;	/* a filemap fault came in this pass: its finish maps its page */
	__s32 nesting;		/* the RCU read-lock nesting a program sees at the fault's start */
	__u64 address;		/* the fault's address */
	/* At kmem:rss_stat: this change of the count maps the fault's pages (`here` 1), how many
	 * besides the page the fault's filemap fault counted, their file and the fault's page. */
	__u64 here;
	__u64 here_pages;
	__u64 here_file;
	__u64 here_index;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebq_file_count);
} ebq_file_pages SEC(".maps");

/* Its value's address on each CPU, less its per-CPU base, is that CPU's per-CPU offset. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} ebq_cpu_offsets SEC(".maps");

/* Most CPUs summed; the lookup of a CPU past the last possible one ends the loop first. */
#define EBQ_MAX_CPUS 1024

/* The current process's file pages, exact: the counter's shared count plus each CPU's share. */
static __always_inline __s64 ebq_file_page_count(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	void *volatile offsets = &ebq_cpu_offsets;
	__u64 offsets_at = 0, base = 0, counters;
	__s64 pages;
	__u32 zero = 0;

	if (!mm)
		return 0;
	pages = BPF_CORE_READ(mm, rss_stat[MM_FILEPAGES].count);
	counters = (__u64)BPF_CORE_READ(mm, rss_stat[MM_FILEPAGES].counters);
	bpf_probe_read_kernel(&offsets_at, sizeof(offsets_at), (void *)&offsets);
	bpf_probe_read_kernel(&base, sizeof(base), (void *)(offsets_at + bpf_core_field_offset(struct bpf_array, pptrs)));
	for (__u32 cpu = 0; cpu < EBQ_MAX_CPUS; cpu++) {
		void *volatile value = bpf_map_lookup_percpu_elem(&ebq_cpu_offsets, &zero, cpu);
		__u64 at = 0;
		__s32 share = 0;

		if (!value)
			break;
		bpf_probe_read_kernel(&at, sizeof(at), (void *)&value);
		bpf_probe_read_kernel(&share, sizeof(share), (void *)(counters + (at - base)));
		pages += share;
	}
	return pages;
}

/* Keeps the count before a fault at `address` maps anything. */
static __always_inline void ebq_count_file_pages(__u64 address)
{
	struct ebq_file_count *last;

	if (!ebq_in_scope_now())
		return;
	last = bpf_task_storage_get(&ebq_file_pages, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (last) {
		last->pages = ebq_file_page_count();
		last->counted = 1;
		last->faulted = 0;
		last->discounted = 0;
		last->finishing = 0;
		last->address = address;
#ifdef EBQ_FINISH
		last->nesting = bpf_get_current_task_btf()->rcu_read_lock_nesting;
#endif
	}
}

/* At a filemap fault: the fault's first one reads its page in, and counts it; each one's finish
 * maps the page, unless fault-around does when the fault runs again. */
static __always_inline void ebq_note_filemap_fault(__u64 mapping, __u64 index)
{
	struct ebq_file_count *last;

	if (!ebq_in_scope_now())
		return;
	last = bpf_task_storage_get(&ebq_file_pages, bpf_get_current_task_btf(), 0, 0);
	if (!last)
		return;
	last->finishing = 1;
	if (!last->faulted) {
		last->faulted = 1;
		last->mapping = mapping;
		last->index = index;
	}
}

/* True when this fault's fault-around left this page uncounted (its first filemap fault had
 * counted it) yet did not map it: this pass maps it, so the `retry` column says 0 and it counts. */
static __always_inline int ebq_fault_around_discounted(__u64 mapping, __u64 index)
{
	struct ebq_file_count *last = bpf_task_storage_get(&ebq_file_pages, bpf_get_current_task_btf(), 0, 0);

	if (!last || !last->discounted || last->mapping != mapping || last->index != index)
		return 0;
	last->discounted = 0;
	return 1;
}

/* At a fault-around over pages first..last of `mapping`: the pages it mapped (the count now less
 * the thread's last; none before the thread's first fault since the query attached), less the
 * page its fault's filemap fault counted; now is the thread's last. */
static __always_inline __u64 ebq_pages_mapped(__u64 mapping, __u64 first, __u64 last_index)
{
	__s64 now = ebq_file_page_count(), mapped;
	struct ebq_file_count *last = bpf_task_storage_get(&ebq_file_pages, bpf_get_current_task_btf(), 0,
							   BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!last)
		return 0;
	mapped = last->counted ? now - last->pages : 0;
	if (mapped > 0 && last->faulted && !last->discounted && last->mapping == mapping &&
	    last->index >= first && last->index <= last_index) {
		mapped--;
		last->discounted = 1;
	}
	last->pages = now;
	last->counted = 1;
	last->finishing = 0;	/* a filemap fault after this one finishes anew */
	return mapped > 0 ? mapped : 0;
}

"#;

/// At `kmem:rss_stat` ([`FINISH_PROGRAMS`] and the query's columns there);
/// after [`PRELUDE`], the mapping's file helper and the typed file helpers.
pub const FINISH: &str = r#"/* The RCU read-lock nesting fault-around's tracepoint sees, plus 1 (0: not seen yet). A
 * fault-around that maps a PMD changes the count at that nesting (and skips the tracepoint); one
 * that maps page table entries a level deeper (a page table is mapped under the RCU read lock,
 * 6.5 on); a fault's finish shallower (fault-around runs under the lock). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __s32);
} ebq_around_depth SEC(".maps");

static __always_inline __s32 *ebq_around(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&ebq_around_depth, &zero);
}

/* Any process's fault-around will do (the first since the query attached: a command run under
 * -c faults around in its libraries before anything else). */
static __always_inline void ebq_learn_around_depth(void)
{
	__s32 *around = ebq_around();

	if (around && !*around)
		*around = bpf_get_current_task_btf()->rcu_read_lock_nesting + 1;
}

static long ebq_vma_page(struct task_struct *task, struct vm_area_struct *vma, void *at)
{
	((__u64 *)at)[1] = (__u64)vma->vm_file;
	((__u64 *)at)[2] = vma->vm_pgoff + ((((__u64 *)at)[0] - vma->vm_start) >> 12);
	return 0;
}

/* At kmem:rss_stat, before the query's program: whether this change of the file-page count is a
 * fault mapping its pages that no other event counts, and how many besides the fault's own page
 * (its filemap fault's row counted that one):
 * - a filemap fault's finish (finish_fault), which maps the page or its large folio whole;
 * - a fault-around that maps a PMD-sized folio whole (filemap_map_pmd), which returns before
 *   mm_filemap_map_pages, where every other fault-around is counted.
 * They are told apart by how deep in the RCU read lock they run over the fault's start. */
static __always_inline void ebq_count_finished_pages(__u64 mm, __u64 member)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ebq_file_count *last = bpf_task_storage_get(&ebq_file_pages, task, 0, 0);
	__s32 *around = ebq_around();
	__u64 at[3] = {};
	__s64 now, mapped;
	__s32 depth;
	int finish, pmd_around;

	if (!last)
		return;
	last->here = 0;
	if ((int)member != MM_FILEPAGES || (__u64)task->mm != mm || !last->counted)
		return;
	depth = task->rcu_read_lock_nesting - last->nesting;
	finish = last->finishing && depth <= EBQ_FINISH_DEPTH;
	/* Only where a fault-around of page table entries runs deeper than one of a PMD. */
	pmd_around = EBQ_FINISH_DEPTH && !finish && around && *around && task->rcu_read_lock_nesting == *around - 1;
	if (!finish && !pmd_around)
		return;
	now = ebq_file_page_count();
	mapped = now - last->pages;
	last->pages = now;
	last->finishing = 0;
	/* The page the fault's filemap fault counted: a finish maps it (had a fault-around left it
	 * unmapped, the fault's retry handed it back); a fault-around may, as at its own event. */
	if (mapped > 0 && last->faulted && (finish || !last->discounted)) {
		mapped--;
		last->discounted = !finish;
	}
	if (last->faulted) {
		last->here_file = (__u64)ebq_file_of_mapping(last->mapping);
		last->here_index = last->index;
	} else {
		at[0] = last->address;
		bpf_find_vma(task, last->address, ebq_vma_page, at, 0);
		last->here_file = at[1];
		last->here_index = at[2];
	}
	last->here = 1;
	last->here_pages = mapped > 0 ? mapped : 0;
}

/* The query's columns at kmem:rss_stat: the pages, page and file of a fault's mapping (0 and no
 * file at every other change of the counters). */
static __always_inline struct ebq_file_count *ebq_finish(void)
{
	struct ebq_file_count *last = bpf_task_storage_get(&ebq_file_pages, bpf_get_current_task_btf(), 0, 0);

	return last && last->here ? last : 0;
}
static __always_inline __u64 ebq_pages_finished(void)
{
	struct ebq_file_count *f = ebq_finish();

	return f ? f->here_pages : 0;
}
static __always_inline __u64 ebq_fault_index(void)
{
	struct ebq_file_count *f = ebq_finish();

	return f ? f->here_index : 0;
}
static __always_inline struct file *ebq_file_of_fault(void)
{
	struct ebq_file_count *f = ebq_finish();

	return bpf_rdonly_cast((void *)(f ? f->here_file : 0), bpf_core_type_id_kernel(struct file));
}

"#;

/// The counting programs' C, [`FINISH_PROGRAMS`]' too when `finish`.
pub fn programs(finish: bool) -> String {
    programs_of(finish)
        .map(|(name, tracepoint, call)| {
            let event = tracepoint.split_once(':').map_or(*tracepoint, |(_, e)| e);
            format!("SEC(\"tp_btf/{event}\")\nint {name}(__u64 *ctx)\n{{\n\t{call};\n\treturn 0;\n}}\n\n")
        })
        .collect()
}
