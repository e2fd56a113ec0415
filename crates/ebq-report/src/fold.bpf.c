/*
 * `ebq report io`'s kernel fold: Darshan's POSIX record of every file, kept
 * in the kernel (report/kernel_fold.rs reads it back).
 *
 * Appended by the engine after vmlinux.h, bpf_helpers.h, `struct ebq_row`
 * and one `#define EBQ_ROW_<column> <field>` per column of report/query.rs's
 * SQL; kernel_fold::source puts report/fold_c.rs's generated header before
 * it (system call numbers EBQ_NR_*, path codes, counter indices, size
 * buckets: every fact Rust reads too) and its layout assertions after it.
 *
 * It is report/query.rs's `Decoder::{submitted, operation}` and
 * report/posix.rs's `Open::add` (through `fold`) in C, rule for rule; the
 * comments name what each part reproduces. What differs, and why:
 * - order: a row is folded when its end event runs, so a file's operations
 *   are folded in completion order, where posix::fold sorts them by start
 *   time. Darshan's own order is its wrappers' (each call recorded when it
 *   returns), so this is no further from Darshan; offsets, sequentiality,
 *   the last end timestamps and the no-overlap timers follow that order.
 * - the lock: tracepoint programs may not take a `bpf_spin_lock` (the
 *   verifier: "tracing progs cannot use bpf_spin_lock yet"), so a file's
 *   state is guarded by a word of its own (`lock`, where a bpf_spin_lock
 *   would be): compare-and-swap to take it, exchange to give it back (both
 *   fully ordered BPF atomics), a bounded spin (bpf_loop) while another CPU
 *   holds it. A row that still finds it held after EBQ_FOLD_SPINS tries
 *   (a holder preempted in the middle) is not folded: ebq_fold returns 1
 *   and the engine counts it dropped, as for a full map.
 * - POSIX_FILE_NOT_ALIGNED needs the file system's block size, which only
 *   user space knows (statfs): the kernel keeps a histogram of the reads'
 *   and writes' Darshan offsets by trailing zero bits (`align`), from which
 *   user space counts `off % bs != 0` exactly for a power-of-two block size.
 * - POSIX_FILE_ALIGNMENT: posix::fold takes the block size of the mount
 *   point of every row that has one; here the last one seen (`align_mount`)
 *   names the block size. They differ only for a file seen through mount
 *   points of different block sizes.
 */

/* A row is call `nr` (a call this machine lacks is no row's). */
#define EBQ_FOLD_IS(id, nr) ((nr) >= 0 && (id) == (nr))

/* OpKind. */
#define EBQ_FOLD_NONE 0
#define EBQ_FOLD_OPEN 1
#define EBQ_FOLD_CLOSE 2
#define EBQ_FOLD_READ 3
#define EBQ_FOLD_WRITE 4
#define EBQ_FOLD_SEEK 5
#define EBQ_FOLD_FSYNC 6
#define EBQ_FOLD_FDATASYNC 7
#define EBQ_FOLD_MAP 8

/* `last_io`: Darshan's last access, none yet, a read or a write. */
#define EBQ_FOLD_IO_NONE 0
#define EBQ_FOLD_IO_READ 1
#define EBQ_FOLD_IO_WRITE 2

/*
 * counters[] (EBQ_FOLD_C_*), per_path[] (EBQ_FOLD_PP_*) and fcounters[]
 * (EBQ_FOLD_F_*) are generated: a read's and a write's side by side, indexed
 * `+ w` with w = 0 read, 1 write (and fcounters' times `+ t`, t an
 * EBQ_FOLD_T_*). POSIX_MEM_ALIGNMENT, POSIX_FILE_ALIGNMENT and
 * POSIX_FILE_NOT_ALIGNED are user space's.
 */
#define EBQ_FOLD_PAIRED(read, write) _Static_assert((write) == (read) + 1, "`+ w` indexing: " #write)
EBQ_FOLD_PAIRED(EBQ_FOLD_C_READS, EBQ_FOLD_C_WRITES);
EBQ_FOLD_PAIRED(EBQ_FOLD_C_BYTES_READ, EBQ_FOLD_C_BYTES_WRITTEN);
EBQ_FOLD_PAIRED(EBQ_FOLD_C_MAX_BYTE_READ, EBQ_FOLD_C_MAX_BYTE_WRITTEN);
EBQ_FOLD_PAIRED(EBQ_FOLD_C_CONSEC_READS, EBQ_FOLD_C_CONSEC_WRITES);
EBQ_FOLD_PAIRED(EBQ_FOLD_C_SEQ_READS, EBQ_FOLD_C_SEQ_WRITES);
EBQ_FOLD_PAIRED(EBQ_FOLD_C_MAX_READ_TIME_SIZE, EBQ_FOLD_C_MAX_WRITE_TIME_SIZE);
EBQ_FOLD_PAIRED(EBQ_FOLD_PP_READS, EBQ_FOLD_PP_WRITES);
EBQ_FOLD_PAIRED(EBQ_FOLD_PP_BYTES_READ, EBQ_FOLD_PP_BYTES_WRITTEN);
EBQ_FOLD_PAIRED(EBQ_FOLD_F_READ_START, EBQ_FOLD_F_WRITE_START);
EBQ_FOLD_PAIRED(EBQ_FOLD_F_READ_END, EBQ_FOLD_F_WRITE_END);
EBQ_FOLD_PAIRED(EBQ_FOLD_F_READ_TIME, EBQ_FOLD_F_WRITE_TIME);
EBQ_FOLD_PAIRED(EBQ_FOLD_F_WRITE_TIME, EBQ_FOLD_F_META_TIME);
EBQ_FOLD_PAIRED(EBQ_FOLD_F_MAX_READ_TIME, EBQ_FOLD_F_MAX_WRITE_TIME);

/* last_end[t]: the no-overlap timers' last ends (read, write, meta). */
#define EBQ_FOLD_T_READ 0
#define EBQ_FOLD_T_WRITE 1
#define EBQ_FOLD_T_META 2

/* The per-CPU cache of files' slots (ebq_fold_record): 2^bits entries. */
#define EBQ_FOLD_CACHE_BITS 6
#define EBQ_FOLD_CACHED (1 << EBQ_FOLD_CACHE_BITS)

/* Tries of a held file lock before the row is given up (bpf_loop iterations). */
#define EBQ_FOLD_SPINS (1 << 14)

struct ebq_fold_key {
	__u32 dev;	/* the kernel's dev_t: major << 20 | minor */
	__u32 pad;
	__u64 inode;
};

struct ebq_fold_common {
	__s64 value;
	__s64 count;
};

struct ebq_fold_file {
	__u32 lock;		/* 0 free, 1 held (where a struct bpf_spin_lock would be) */
	__u32 last_io;		/* EBQ_FOLD_IO_* */
	__u32 offset_known;	/* `offset` holds Darshan's offset (Open::offset is Some) */
	__u32 align_known;	/* a row with a mount point was seen: the block size applies */
	__u32 access_used;	/* slots of access[] in use */
	__u32 stride_used;	/* slots of stride[] in use */
	__s64 offset;		/* Darshan's offset */
	__s64 last_byte[2];	/* last_byte_read, last_byte_written */
	__s64 last_end[3];	/* last_read_end, last_write_end, last_meta_end */
	__s64 counters[EBQ_FOLD_COUNTERS];
	__s64 per_path[EBQ_FOLD_PER_PATH];
	__s64 size[2 * EBQ_FOLD_BUCKETS];
	__s64 fcounters[EBQ_FOLD_FCOUNTERS];
	__u64 align[EBQ_FOLD_ALIGN];
	struct ebq_fold_common access[EBQ_FOLD_COMMON];
	struct ebq_fold_common stride[EBQ_FOLD_COMMON];
	char fs_type[16];
	char mount_point[64];
	char name[64];
	char align_mount[64];	/* the last mount point seen: its block size is the file's alignment */
	__u32 mount_id;		/* a system call row's mount (user space names it: report/mounts.rs) */
	__u32 align_mount_id;	/* the last mount seen by id rather than by name (align_mount then empty) */
	__u64 access_seen[EBQ_FOLD_COMMON_SEEN];	/* access[]'s values, a bit each by hash (ebq_fold_common) */
	__u64 stride_seen[EBQ_FOLD_COMMON_SEEN];	/* stride[]'s */
	struct ebq_fold_key key;	/* the file, once its slot is its (0 before) */
	/*
	 * Never touched: the records lie end to end in the array, so the cache
	 * line of a record's lock (written at every row) holds the end of the
	 * record before it, which must be none of that file's hot fields when
	 * two CPUs fold the two files (false sharing).
	 */
	__u8 cold_tail[EBQ_FOLD_COLD_TAIL];
};

/* What the rows were, summed per CPU. */
struct ebq_fold_totals {
	__u64 operations;	/* rows Decoder::operation makes an operation of (folded) */
	__u64 aio_submitted;	/* Σ Decoder::submitted: io_submit's results, negatives as 0 */
	__u64 aio_counted;	/* operations via AIO */
	__u64 no_file;		/* rows of no file's operation (not io_submit's) */
	__u64 inside_stdio;	/* system calls of a file libc made inside a stdio call (the stdio mark) */
	__u64 past_files;	/* rows of files past the EBQ_FOLD_FILES records: not folded, counted dropped */
};

/*
 * Every file's record, in a slot of an array: an array's lookup is inlined
 * by the verifier, a hash's is a call into the kernel, and on this machine
 * (AMD, SRSO's safe RET on every return) that call was 30-40 ns of the
 * report's ~200 per read (issue 39). Slots are handed out in order
 * (ebq_fold_next) and never given back during a run; a record names its
 * file (`key`), 0 while the slot is free. EBQ_FOLD_FILES records are
 * preallocated (EBQ_FOLD_FILES * 2560 B, ~10 MB): a file after the last
 * slot is not folded, its rows counted dropped.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EBQ_FOLD_FILES);
	__type(key, __u32);
	__type(value, struct ebq_fold_file);
} ebq_fold_files SEC(".maps");

/* Each file's slot, by (dev, inode): where a file not in this CPU's cache is found. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EBQ_FOLD_FILES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ebq_fold_key);
	__type(value, __u32);
} ebq_fold_slots SEC(".maps");

/* The next slot to hand out (may pass EBQ_FOLD_FILES by the CPUs racing for the last). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} ebq_fold_next SEC(".maps");

/*
 * The slots of the files last folded on this CPU, direct-mapped by the
 * key's hash: a guess, checked against the record's own key, so a slot
 * written by a nested program halfway never names the wrong file.
 */
struct ebq_fold_cache {
	__u32 slot[EBQ_FOLD_CACHED];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ebq_fold_cache);
} ebq_fold_cache SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ebq_fold_totals);
} ebq_fold_totals SEC(".maps");

/*
 * The key of an fdopen's file (the stdio mark's ebq_fold_fdopens), looked up
 * at the call's entry in the thread's descriptor table: the STDIO record of
 * an fdopen'ed stream is named by its descriptor's POSIX record, and user
 * space matches this to the STDIO query's fdopen by thread, descriptor and
 * time (report/kernel_fold.rs fdopens).
 */
struct ebq_fold_fdopen {
	__u32 tid;
	__s32 fd;
	__u64 time;
};

#ifdef EBQ_FOLD_STDIO_MARK
/*
 * The stdio mark (`ebq report io --stdio`): the query's stdio branches make a
 * row at every entry and return of a probed libc stdio function, and each
 * thread keeps its depth of stdio calls in task storage. A system call made
 * while it is above 0 is libc's, inside fwrite or fclose, not the program's:
 * Darshan's POSIX module, which wraps the program's calls, never sees it, so
 * it is counted in `inside_stdio` and not folded. The depth is read when the
 * call's row is folded, at its exit: a thread runs one thing at a time, so it
 * is in the same stdio call then as at the entry.
 */
struct ebq_fold_stdio {
	__u32 depth;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebq_fold_stdio);
} ebq_fold_stdio SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct ebq_fold_fdopen);
	__type(value, struct ebq_fold_key);
} ebq_fold_fdopens SEC(".maps");

/* A stdio mark row: a return lowers the thread's depth, an entry raises it. 1: not kept (counted dropped). */
static __always_inline int ebq_fold_stdio_row(struct ebq_row *r)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct ebq_fold_stdio *m;
	__u64 id = r->EBQ_ROW_id;

	if (id == EBQ_FOLD_MARK_RETURN) {
		/* A return whose entry came before the query attached finds no depth to lower. */
		m = bpf_task_storage_get(&ebq_fold_stdio, task, 0, 0);
		if (m && m->depth > 0)
			m->depth--;
		return 0;
	}
	m = bpf_task_storage_get(&ebq_fold_stdio, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!m)
		return 1;
	m->depth++;
	if (id == EBQ_FOLD_MARK_FDOPEN) {
		__u32 fd = (__u32)r->EBQ_ROW_offset;
		struct ebq_fold_fdopen k = { .tid = (__u32)r->EBQ_ROW_tid, .fd = (__s32)fd, .time = r->EBQ_ROW_time };
		struct file *file = ebq_file_of(fd);
		struct ebq_fold_key v = { .dev = ebq_file_dev(file), .inode = ebq_file_ino(file) };

		/* A descriptor that is not open: fdopen fails, and names nothing. */
		if (v.inode && bpf_map_update_elem(&ebq_fold_fdopens, &k, &v, BPF_ANY))
			return 1;
	}
	return 0;
}

/* The current thread is inside a probed stdio call. */
static __always_inline int ebq_fold_in_stdio(void)
{
	struct ebq_fold_stdio *m = bpf_task_storage_get(&ebq_fold_stdio, bpf_get_current_task_btf(), 0, 0);

	return m && m->depth > 0;
}
#endif

/* The spin's state, on the caller's stack. */
struct ebq_fold_spin {
	struct ebq_fold_file *f;
	__u64 locked;
};

/* One try of a held lock (a bpf_loop callback): 1 stops the loop. */
static long ebq_fold_spin_once(__u64 i, void *ctx)
{
	struct ebq_fold_spin *s = ctx;
	struct ebq_fold_file *f = s->f;

	if (!f)
		return 1;
	if (*(volatile __u32 *)&f->lock == 0 && __sync_val_compare_and_swap(&f->lock, 0, 1) == 0) {
		s->locked = 1;
		return 1;
	}
	return 0;
}

/* Takes a file's lock: 0 if it stayed held for EBQ_FOLD_SPINS tries. */
static __always_inline int ebq_fold_lock(struct ebq_fold_file *f)
{
	struct ebq_fold_spin s = { .f = f, .locked = 0 };

	if (__sync_val_compare_and_swap(&f->lock, 0, 1) == 0)
		return 1;
	bpf_loop(EBQ_FOLD_SPINS, ebq_fold_spin_once, &s, 0);
	return s.locked != 0;
}

static __always_inline void ebq_fold_unlock(struct ebq_fold_file *f)
{
	__sync_lock_test_and_set(&f->lock, 0);
}

/* DARSHAN_TIMER_INC_NO_OVERLAP (posix.rs timer_no_overlap). */
static __always_inline void ebq_fold_timer(__s64 *timer, __s64 t1, __s64 t2, __s64 *last)
{
	__s64 l = *last;

	*timer += t1 > l ? t2 - t1 : t2 - l;
	if (t2 > l)
		*last = t2;
}

/* posix.rs first: the earliest start. */
static __always_inline void ebq_fold_first(__s64 *v, __s64 t)
{
	if (*v == 0 || *v > t)
		*v = t;
}

/*
 * The trailing zero bits of `off` (two's complement, so -4096 has 12: Rust's
 * `-4096 % 4096` is 0 as well), 64 for 0: popcount((off & -off) - 1).
 */
static __always_inline __u32 ebq_fold_align_slot(__s64 off)
{
	__u64 x = (__u64)off;
	__u64 y = (x & -x) - 1;

	y = y - ((y >> 1) & 0x5555555555555555ULL);
	y = (y & 0x3333333333333333ULL) + ((y >> 2) & 0x3333333333333333ULL);
	y = (y + (y >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (__u32)((y * 0x0101010101010101ULL) >> 56);
}

/* Fibonacci hashing: the top `bits` bits of v times 2^64 / phi. */
static __always_inline __u32 ebq_fold_hash(__u64 v, int bits)
{
	return (__u32)((v * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

/*
 * posix.rs CommonValues::add: a tracked value counts once more; a new one
 * takes a slot while there are fewer than 32 (0 as well: top4 leaves it out).
 * `seen` is a filter of the values tracked, one bit of 256 by the value's
 * hash: a clear bit says the value has no slot, without the scan. A random
 * read's strides are all new, and once the 32 slots were taken every one of
 * them cost a scan of 32 compares (issue 39: 12–18 ns of the fold per read);
 * with at most 32 bits set, about one in eight still scans. (An open-coded
 * hash probe cost 275 ms more of the verifier's at every load, its way out at
 * every probe walked; in bpf_loop, its calls cost what the scan did.)
 */
static __always_inline void ebq_fold_common(struct ebq_fold_common *cv, __u64 *seen, __u32 *used, __s64 v)
{
	__u32 h = ebq_fold_hash((__u64)v, 8);
	__u64 *word = &seen[(h >> 6) & (EBQ_FOLD_COMMON_SEEN - 1)];
	__u64 bit = 1ULL << (h & 63);
	__u32 n = *used;

	if (*word & bit) {
		for (__u32 i = 0; i < EBQ_FOLD_COMMON; i++) {
			if (i >= n)
				break;
			if (cv[i].value == v) {
				cv[i].count++;
				return;
			}
		}
	}
	/* Read again: the loop's bound on n must not split the verifier's states. */
	n = *(volatile __u32 *)used;
	if (n < EBQ_FOLD_COMMON) {
		cv[n].value = v;
		cv[n].count = 1;
		*used = n + 1;
		*word |= bit;
	}
}
_Static_assert(EBQ_FOLD_COMMON_SEEN == 4, "256 bits: the hash's 8");

/* Copies a string column into a record's field (both whole arrays, the shorter's length). */
#define EBQ_FOLD_COPY(dst, src)                                                                  \
	__builtin_memcpy(dst, src, sizeof(dst) < sizeof(src) ? sizeof(dst) : sizeof(src))

/*
 * Decoder::operation's kind of a system call row (its `kinds`) in the low bits,
 * with its `positioned` and `vectored` (calls whose buffer is not read: no
 * memory alignment) as flags, by call number (fold_c.rs's table; 0 is
 * EBQ_FOLD_NONE). A load where ten to twenty compares of the number stood.
 */
#define EBQ_FOLD_CALL_KIND 15
#define EBQ_FOLD_CALL_POSITIONED 16
#define EBQ_FOLD_CALL_VECTORED 32
static const __u8 ebq_fold_calls[EBQ_FOLD_CALL_SLOTS] = EBQ_FOLD_CALL_KINDS;

static __always_inline __u32 ebq_fold_call(__s64 id)
{
	return id >= 0 && id < EBQ_FOLD_CALL_SLOTS ? ebq_fold_calls[id] : EBQ_FOLD_NONE;
}

/* posix.rs Open::add's read and write branch (w: 0 read, 1 write), the lock held. */
static __always_inline void ebq_fold_access(struct ebq_fold_file *f, struct ebq_row *r, __u32 w, __u32 via,
					    int positioned, int mem)
{
	__s64 ret = (__s64)r->EBQ_ROW_ret;
	__s64 t1 = (__s64)r->EBQ_ROW_time;
	__s64 t2 = (__s64)((__u64)r->EBQ_ROW_time + (__u64)r->EBQ_ROW_latency);
	__s64 roff = (__s64)r->EBQ_ROW_offset;
	__s64 off = positioned ? roff : (f->offset_known ? f->offset : roff);
	__s64 last = f->last_byte[w];
	__s64 last_byte = (__s64)((__u64)off + (__u64)ret - 1);
	__s64 stride = 0;
	__u32 slot;

	f->offset = (__s64)((__u64)off + (__u64)ret);
	f->offset_known = 1;
	if (off > last)
		f->counters[EBQ_FOLD_C_SEQ_READS + w]++;
	if (off == (__s64)((__u64)last + 1))
		f->counters[EBQ_FOLD_C_CONSEC_READS + w]++;
	if (off > 0 && off > last && last != 0)
		stride = (__s64)((__u64)off - (__u64)last - 1);
	f->last_byte[w] = last_byte;
	if (f->counters[EBQ_FOLD_C_MAX_BYTE_READ + w] < last_byte)
		f->counters[EBQ_FOLD_C_MAX_BYTE_READ + w] = last_byte;
	f->counters[EBQ_FOLD_C_BYTES_READ + w] += ret;
	f->counters[EBQ_FOLD_C_READS + w]++;
	f->per_path[via * EBQ_FOLD_PP_PER_VIA + EBQ_FOLD_PP_BYTES_READ + w] += ret;
	f->per_path[via * EBQ_FOLD_PP_PER_VIA + EBQ_FOLD_PP_READS + w]++;
	f->size[w * EBQ_FOLD_BUCKETS + ebq_fold_bucket(ret)]++;
	ebq_fold_common(f->access, f->access_seen, &f->access_used, ret);
	ebq_fold_common(f->stride, f->stride_seen, &f->stride_used, stride);
	if (mem && ((__u64)r->EBQ_ROW_buf & 7))
		f->counters[EBQ_FOLD_C_MEM_NOT_ALIGNED]++;
	/* posix.rs counts `off % block_size != 0` once a block size is known (a mount point seen). */
	slot = ebq_fold_align_slot(off);
	if (f->align_known && slot < EBQ_FOLD_ALIGN)
		f->align[slot]++;
	if (f->last_io == (w ? EBQ_FOLD_IO_READ : EBQ_FOLD_IO_WRITE))
		f->counters[EBQ_FOLD_C_RW_SWITCHES]++;
	f->last_io = w ? EBQ_FOLD_IO_WRITE : EBQ_FOLD_IO_READ;
	ebq_fold_first(&f->fcounters[EBQ_FOLD_F_READ_START + w], t1);
	f->fcounters[EBQ_FOLD_F_READ_END + w] = t2;
	if (f->fcounters[EBQ_FOLD_F_MAX_READ_TIME + w] < t2 - t1) {
		f->fcounters[EBQ_FOLD_F_MAX_READ_TIME + w] = t2 - t1;
		f->counters[EBQ_FOLD_C_MAX_READ_TIME_SIZE + w] = ret;
	}
	ebq_fold_timer(&f->fcounters[EBQ_FOLD_F_READ_TIME + w], t1, t2, &f->last_end[w]);
}

/* posix.rs Open::add (after fold's block size), the lock held. */
static __always_inline void ebq_fold_add(struct ebq_fold_file *f, struct ebq_row *r, int kind, __u32 via,
					 int positioned, int mem)
{
	int open = kind == EBQ_FOLD_OPEN;
	__s64 ret = (__s64)r->EBQ_ROW_ret;
	__s64 t1 = (__s64)r->EBQ_ROW_time;
	__s64 t2 = (__s64)((__u64)r->EBQ_ROW_time + (__u64)r->EBQ_ROW_latency);

	if (ret < 0) {
		f->counters[EBQ_FOLD_C_ERRORS]++;
		return;
	}
	/* The first row that names the mount names the file's: by its strings, or (system calls) its id. */
	if (!f->fs_type[0] && !f->mount_id) {
		if (r->EBQ_ROW_fs_type[0]) {
			EBQ_FOLD_COPY(f->fs_type, r->EBQ_ROW_fs_type);
			EBQ_FOLD_COPY(f->mount_point, r->EBQ_ROW_mount_point);
		} else if (r->EBQ_ROW_mount_id) {
			f->mount_id = r->EBQ_ROW_mount_id;
		}
	}
	/* A system call's row carries its file's dentry, not its name (query.rs Names::Late): the name
	 * is read once, for a record that has none yet, not copied at every call. */
	if (!f->name[0]) {
		/* Out of the CO-RE read: the row is ebq's struct, which the kernel's BTF does not relocate. */
		struct dentry *dentry = (struct dentry *)r->EBQ_ROW_dentry_id;

		if (r->EBQ_ROW_file_name[0])
			EBQ_FOLD_COPY(f->name, r->EBQ_ROW_file_name);
		else if (dentry)
			bpf_probe_read_kernel_str(f->name, sizeof(f->name), BPF_CORE_READ(dentry, d_name.name));
	}
	/* posix.rs Open::add: Darshan sees libc's calls only; a request (io_uring, AIO) or a mapping's
	 * pages count in ebq's per-path counters alone. */
	if (via != EBQ_FOLD_VIA_SYSCALL) {
		__s64 *pp = &f->per_path[(via & 3) * EBQ_FOLD_PP_PER_VIA];

		if (kind == EBQ_FOLD_READ || kind == EBQ_FOLD_MAP) {
			pp[EBQ_FOLD_PP_READS]++;
			pp[EBQ_FOLD_PP_BYTES_READ] += ret;
		} else if (kind == EBQ_FOLD_WRITE) {
			pp[EBQ_FOLD_PP_WRITES]++;
			pp[EBQ_FOLD_PP_BYTES_WRITTEN] += ret;
		} else if (kind == EBQ_FOLD_FSYNC || kind == EBQ_FOLD_FDATASYNC) {
			pp[EBQ_FOLD_PP_FSYNCS]++;
		}
		return;
	}
	switch (kind) {
	case EBQ_FOLD_OPEN:
	case EBQ_FOLD_CLOSE:
		if (open) {
			f->offset = 0;
			f->offset_known = 1;
		}
		f->last_byte[0] = 0;
		f->last_byte[1] = 0;
		ebq_fold_timer(&f->fcounters[EBQ_FOLD_F_READ_TIME + EBQ_FOLD_T_META], t1, t2,
			       &f->last_end[EBQ_FOLD_T_META]);
		if (open) {
			f->fcounters[EBQ_FOLD_F_OPEN_END] = t2;
			ebq_fold_first(&f->fcounters[EBQ_FOLD_F_OPEN_START], t1);
			f->counters[EBQ_FOLD_C_OPENS]++;
		} else {
			f->fcounters[EBQ_FOLD_F_CLOSE_END] = t2;
			ebq_fold_first(&f->fcounters[EBQ_FOLD_F_CLOSE_START], t1);
		}
		break;
	case EBQ_FOLD_SEEK:
		f->offset = ret;
		f->offset_known = 1;
		ebq_fold_timer(&f->fcounters[EBQ_FOLD_F_READ_TIME + EBQ_FOLD_T_META], t1, t2,
			       &f->last_end[EBQ_FOLD_T_META]);
		f->counters[EBQ_FOLD_C_SEEKS]++;
		break;
	case EBQ_FOLD_FSYNC:
	case EBQ_FOLD_FDATASYNC:
		ebq_fold_timer(&f->fcounters[EBQ_FOLD_F_READ_TIME + EBQ_FOLD_T_WRITE], t1, t2,
			       &f->last_end[EBQ_FOLD_T_WRITE]);
		f->counters[kind == EBQ_FOLD_FSYNC ? EBQ_FOLD_C_FSYNCS : EBQ_FOLD_C_FDSYNCS]++;
		f->per_path[EBQ_FOLD_VIA_SYSCALL * EBQ_FOLD_PP_PER_VIA + EBQ_FOLD_PP_FSYNCS]++;
		break;
	default:
		/* A p… call at offset -1 is at the file position. */
		positioned = positioned && (__s64)r->EBQ_ROW_offset >= 0;
		ebq_fold_access(f, r, kind == EBQ_FOLD_WRITE ? 1 : 0, via, positioned, mem);
		break;
	}
}

/*
 * An open's file: its row's file columns are its argument 0's (a path, or a
 * directory's descriptor: query.rs syscalls_for_kernel_fold), so they are
 * replaced by the file of the descriptor the call returned. The fold runs in
 * the call's exit program, in the calling thread, whose table holds it.
 */
static __always_inline void ebq_fold_opened(struct ebq_row *r)
{
	__s64 fd = (__s64)r->EBQ_ROW_ret;
	struct file *file = ebq_file_of(fd >= 0 ? (__u32)fd : (__u32)-1);

	r->EBQ_ROW_inode = ebq_file_ino(file);
	r->EBQ_ROW_dev = ebq_file_dev(file);
	r->EBQ_ROW_mount_id = ebq_file_mount_id(file);
	r->EBQ_ROW_dentry_id = ebq_file_dentry_id(file);
}

/*
 * The record of file `key`: the slot this CPU's cache holds for it, if that
 * record is the file's; else its slot in ebq_fold_slots (and the cache
 * learns it); else a new slot. Two CPUs may take a slot each for one new
 * file: the one whose slot enters ebq_fold_slots first names its record,
 * the other slot stays nameless (user space skips a record of inode 0).
 * NULL: the slots are all taken.
 */
static __always_inline struct ebq_fold_file *ebq_fold_record(struct ebq_fold_key *key)
{
	__u32 zero = 0, n, *slot, *next;
	__u32 h = ebq_fold_hash(key->inode ^ key->dev, EBQ_FOLD_CACHE_BITS);
	struct ebq_fold_cache *cache = bpf_map_lookup_elem(&ebq_fold_cache, &zero);
	struct ebq_fold_file *f;
	int named = 0;

	if (!cache)
		return 0;
	n = cache->slot[h & (EBQ_FOLD_CACHED - 1)];
	f = bpf_map_lookup_elem(&ebq_fold_files, &n);
	if (f && f->key.inode == key->inode && f->key.dev == key->dev)
		return f;
	slot = bpf_map_lookup_elem(&ebq_fold_slots, key);
	if (slot) {
		n = *slot;
	} else {
		next = bpf_map_lookup_elem(&ebq_fold_next, &zero);
		/* Read first: past the last slot, the count is not raised (it must never wrap). */
		if (!next || *(volatile __u32 *)next >= EBQ_FOLD_FILES)
			return 0;
		n = __sync_fetch_and_add(next, 1);
		if (n >= EBQ_FOLD_FILES)
			return 0;
		if (bpf_map_update_elem(&ebq_fold_slots, key, &n, BPF_NOEXIST)) {
			/* Another CPU's slot for it came first (or the directory is full). */
			slot = bpf_map_lookup_elem(&ebq_fold_slots, key);
			if (!slot)
				return 0;
			n = *slot;
		} else {
			named = 1;	/* this slot is the file's: its record is named below */
		}
	}
	f = bpf_map_lookup_elem(&ebq_fold_files, &n);
	if (!f)
		return 0;
	if (named)
		f->key = *key;
	cache->slot[h & (EBQ_FOLD_CACHED - 1)] = n;
	return f;
}

/*
 * Decoder::operation's operation of a row, its kind, path and flags known:
 * its file's record takes it (posix.rs fold and Open::add). 1: not folded
 * (counted dropped): every record taken, or the file's lock held too long.
 */
static __always_inline int ebq_fold_operation(struct ebq_row *r, struct ebq_fold_totals *tot, int kind, __u32 via,
					      int positioned, int mem)
{
	struct ebq_fold_key key = {};
	struct ebq_fold_file *f;

	if (kind == EBQ_FOLD_OPEN && via == EBQ_FOLD_VIA_SYSCALL)
		ebq_fold_opened(r);
	/* The row's file; inode 0 is no file (a failed open's, a descriptor not open). */
	key.inode = (__u64)r->EBQ_ROW_inode;
	key.dev = (__u32)r->EBQ_ROW_dev;
	if (key.inode == 0) {
		tot->no_file++;
		return 0;
	}
#ifdef EBQ_FOLD_STDIO_MARK
	/* libc's call inside a stdio call (posix.rs's rows of stdio::Calls::exclude): no POSIX call. */
	if (via == EBQ_FOLD_VIA_SYSCALL && ebq_fold_in_stdio()) {
		tot->inside_stdio++;
		return 0;
	}
#endif

	f = ebq_fold_record(&key);
	if (!f) {
		tot->past_files++;	/* every slot is taken */
		return 1;
	}
	if (!ebq_fold_lock(f))
		return 1;
	/* posix.rs fold: a row with a mount point (a failed one too) gives the file its block size. */
	if (r->EBQ_ROW_mount_point[0]) {
		f->align_known = 1;
		f->align_mount_id = 0;
		EBQ_FOLD_COPY(f->align_mount, r->EBQ_ROW_mount_point);
	} else if (r->EBQ_ROW_mount_id) {
		/* A system call's mount, by id: user space names it (report/mounts.rs). */
		f->align_known = 1;
		f->align_mount_id = r->EBQ_ROW_mount_id;
		f->align_mount[0] = 0;
	}
	ebq_fold_add(f, r, kind, via, positioned, mem && via == EBQ_FOLD_VIA_SYSCALL);
	ebq_fold_unlock(f);
	/* Operations are calls and requests (mod.rs: a mapping's pages are no operation). */
	if (kind != EBQ_FOLD_MAP)
		tot->operations++;
	if (via == EBQ_FOLD_VIA_AIO)
		tot->aio_counted++;
	return 0;
}

/*
 * AIO's requests, read in the raw pair's io_submit and io_getevents rows
 * (query.rs syscalls_for_kernel_fold: no classic syscalls tracepoint, whose
 * perf hooks would run at every system call), as io.ops' aio.submit ⋈
 * aio.complete branch reads them: a request iomap's direct I/O does not run
 * (not O_DIRECT, or an fsync), kept from io_submit to the io_getevents that
 * returns its event, by the process and the iocb's address.
 *
 * What differs: the iocbs are read at io_submit's exit (the fold runs there),
 * those it submitted (its return), where aio.submit reads them all at its
 * entry. A request another thread reaps before io_submit returns is not
 * found then, and is not counted: the report's submitted-against-counted
 * warning says so.
 */
struct ebq_fold_iocb_key {
	__u32 tgid;
	__u32 pad;
	__u64 iocb;	/* the iocb's address in the caller (the io_event's `obj`) */
};

struct ebq_fold_iocb {
	__u64 start;	/* io_submit's entry (aio.submit's time) */
	__s64 offset;
	struct ebq_fold_key file;
	__u64 dentry_id;
	__u32 mount_id;
	__u32 kind;	/* EBQ_FOLD_READ, EBQ_FOLD_WRITE or EBQ_FOLD_FSYNC */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct ebq_fold_iocb_key);
	__type(value, struct ebq_fold_iocb);
} ebq_fold_iocbs SEC(".maps");

/* Of `struct iocb` (<linux/aio_abi.h>, catalog/expand.rs IOCB_FIELDS; fold_c.rs asserts the offsets): a user ABI, it does not move. */
struct ebq_fold_user_iocb {
	__u64 data;
	__u32 key;
	__u32 rw_flags;
	__u16 opcode;
	__s16 reqprio;
	__u32 fd;
	__u64 buf;
	__u64 nbytes;
	__s64 offset;
};

/* `struct io_event` (catalog/expand.rs IO_EVENT_FIELDS, which names `obj` `iocb`). */
struct ebq_fold_user_event {
	__u64 data;
	__u64 iocb;
	__s64 res;
	__s64 res2;
};

/* io.ops' aio.submit branch: `file_flags & 16384` (x86's O_DIRECT) leaves a request to iomap. */
#define EBQ_FOLD_O_DIRECT 16384

/* A walk of a call's array (a bpf_loop's ctx, on the caller's stack). */
struct ebq_fold_walk {
	struct ebq_row *r;
	struct ebq_fold_totals *tot;
	__u64 array;	/* io_submit's iocb pointers, io_getevents' events */
	__u64 time;	/* io_submit's entry, io_getevents' exit */
	__u32 tgid;
	__u32 dropped;	/* requests not kept or not folded */
};

/* One iocb io_submit submitted: kept until its event (iocb opcodes 0 PREAD, 7 PREADV, 1 PWRITE, 8 PWRITEV, 2 FSYNC, 3 FDSYNC). */
static long ebq_fold_submitted(__u64 i, void *ctx)
{
	struct ebq_fold_walk *w = ctx;
	struct ebq_fold_user_iocb cb;
	struct ebq_fold_iocb v = {};
	struct ebq_fold_iocb_key k = { .tgid = w->tgid };
	struct file *file;

	if (bpf_probe_read_user(&k.iocb, sizeof(k.iocb), (void *)(w->array + i * sizeof(__u64))) ||
	    bpf_probe_read_user(&cb, sizeof(cb), (void *)k.iocb))
		return 1;
	if (cb.opcode == 0 || cb.opcode == 7)
		v.kind = EBQ_FOLD_READ;
	else if (cb.opcode == 1 || cb.opcode == 8)
		v.kind = EBQ_FOLD_WRITE;
	else if (cb.opcode == 2 || cb.opcode == 3)
		v.kind = EBQ_FOLD_FSYNC;
	else
		return 0;
	file = ebq_file_of(cb.fd);
	if (v.kind != EBQ_FOLD_FSYNC && (ebq_file_flags(file) & EBQ_FOLD_O_DIRECT))
		return 0;
	v.start = w->time;
	v.offset = cb.offset;
	v.file.inode = ebq_file_ino(file);
	v.file.dev = ebq_file_dev(file);
	v.dentry_id = ebq_file_dentry_id(file);
	v.mount_id = ebq_file_mount_id(file);
	if (bpf_map_update_elem(&ebq_fold_iocbs, &k, &v, BPF_ANY))
		w->dropped++;
	return 0;
}

/* One event io_getevents returned: its request, if kept, folded as the row `w->r` (rewritten). */
static long ebq_fold_reaped(__u64 i, void *ctx)
{
	struct ebq_fold_walk *w = ctx;
	struct ebq_row *r = w->r;
	struct ebq_fold_user_event ev;
	struct ebq_fold_iocb_key k = { .tgid = w->tgid };
	struct ebq_fold_iocb *v;
	int kind;

	if (!r || !w->tot || bpf_probe_read_user(&ev, sizeof(ev), (void *)(w->array + i * sizeof(ev))))
		return 1;
	k.iocb = ev.iocb;
	v = bpf_map_lookup_elem(&ebq_fold_iocbs, &k);
	if (!v)
		return 0;	/* O_DIRECT (iomap's, or no event's), or submitted before the report began */
	kind = v->kind;
	r->EBQ_ROW_path = EBQ_FOLD_PATH_AIO;
	r->EBQ_ROW_inode = v->file.inode;
	r->EBQ_ROW_dev = v->file.dev;
	r->EBQ_ROW_mount_id = v->mount_id;
	r->EBQ_ROW_dentry_id = v->dentry_id;
	r->EBQ_ROW_offset = v->offset;
	r->EBQ_ROW_ret = ev.res;
	r->EBQ_ROW_time = v->start;
	r->EBQ_ROW_latency = w->time - v->start;
	bpf_map_delete_elem(&ebq_fold_iocbs, &k);
	if (ebq_fold_operation(r, w->tot, kind, EBQ_FOLD_VIA_AIO, 1, 0))
		w->dropped++;
	return 0;
}

/* The AIO calls' rows: io_submit's requests counted (Decoder::submitted) and kept, io_getevents' folded. */
static __always_inline int ebq_fold_aio_call(struct ebq_row *r, struct ebq_fold_totals *tot, __s64 id)
{
	__s64 n = (__s64)r->EBQ_ROW_ret;
	struct ebq_fold_walk w = {
		.r = r,
		.tot = tot,
		.array = r->EBQ_ROW_buf,
		.time = r->EBQ_ROW_time,
		.tgid = r->EBQ_ROW_pid,
	};

	if (n <= 0)
		return 0;
	if (EBQ_FOLD_IS(id, EBQ_NR_io_submit)) {
		tot->aio_submitted += (__u64)n;
		bpf_loop(n, ebq_fold_submitted, &w, 0);
	} else {
		w.time = r->EBQ_ROW_time + r->EBQ_ROW_latency;
		bpf_loop(n, ebq_fold_reaped, &w, 0);
	}
	return w.dropped != 0;
}

static __always_inline int ebq_fold(struct ebq_row *r)
{
	struct ebq_fold_totals *tot;
	__u32 zero = 0;
	__u64 path = r->EBQ_ROW_path;
	__s64 id = (__s64)r->EBQ_ROW_id;
	__u32 via = EBQ_FOLD_VIA_SYSCALL;
	int kind = EBQ_FOLD_NONE, positioned = 1, mem = 0;

	tot = bpf_map_lookup_elem(&ebq_fold_totals, &zero);
	if (!tot)
		return 0;
#ifdef EBQ_FOLD_STDIO_MARK
	if (path == EBQ_FOLD_PATH_STDIO_MARK)
		return ebq_fold_stdio_row(r);
#endif

	/* Decoder::submitted, and AIO's requests: io_submit's and io_getevents' rows are no file's operation. */
	if (path == EBQ_FOLD_PATH_SYSCALL && (EBQ_FOLD_IS(id, EBQ_NR_io_submit) || EBQ_FOLD_IS(id, EBQ_NR_io_getevents)))
		return ebq_fold_aio_call(r, tot, id);

	/* Decoder::operation: the kind, the path, `positioned` (with the offset, later) and `mem`. */
	if (path == EBQ_FOLD_PATH_SYSCALL) {
		__u32 call = ebq_fold_call(id);

		kind = call & EBQ_FOLD_CALL_KIND;
		positioned = (call & EBQ_FOLD_CALL_POSITIONED) != 0;
		mem = !(call & EBQ_FOLD_CALL_VECTORED);
	} else if (path == EBQ_FOLD_PATH_IO_URING || path == EBQ_FOLD_PATH_AIO) {
		via = path == EBQ_FOLD_PATH_IO_URING ? EBQ_FOLD_VIA_IO_URING : EBQ_FOLD_VIA_AIO;
		if (id == EBQ_FOLD_REQUEST_READ)
			kind = EBQ_FOLD_READ;
		else if (id == EBQ_FOLD_REQUEST_WRITE)
			kind = EBQ_FOLD_WRITE;
		else if (id == EBQ_FOLD_REQUEST_FSYNC)
			kind = EBQ_FOLD_FSYNC;
	} else if (path == EBQ_FOLD_PATH_MMAP) {
		via = EBQ_FOLD_VIA_MMAP;
		kind = EBQ_FOLD_MAP;
	}
	if (kind == EBQ_FOLD_NONE) {
		tot->no_file++;
		return 0;
	}
	return ebq_fold_operation(r, tot, kind, via, positioned, mem);
}
