/* A minimal external sampler for ebq's pinned maps (ebq run … --pin DIR).
 *
 * Built against the header ebq writes for the query
 *   SELECT fd, COUNT(*), SUM(count), MAX(count), HIST(count)
 *   FROM syscalls.sys_enter_pread64 … GROUP BY fd
 * with `gcc -DEBQ_LAYOUT='"/run/ebq/pins/….h"' pin_reader.c -lbpf`. It walks
 * the pinned group map, merges each group's per-CPU values as the header says
 * (skip CPUs with count 0; add counts, sums and buckets; keep the largest max)
 * and prints one line per group, then the event accounting:
 *
 *   group window=W fd=FD count=N sum=S max=M hist=I:N,I:N,…
 *   stats seen=N matched=N dropped=N
 *
 * An LDMS sampler would do the same in its sample() callback.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include EBQ_LAYOUT

#if EBQ_LAYOUT_VERSION != 2
#error "this reader follows ebq's pinned layout version 1"
#endif

int main(int argc, char **argv)
{
	const char *groups_path = argc > 1 ? argv[1] : EBQ_PIN_GROUPS;
	const char *stats_path = argc > 2 ? argv[2] : EBQ_PIN_STATS;
	int ncpu = libbpf_num_possible_cpus();
	int groups = bpf_obj_get(groups_path);
	int stats = bpf_obj_get(stats_path);

	if (ncpu <= 0 || groups < 0 || stats < 0) {
		fprintf(stderr, "cannot open %s / %s: %s\n", groups_path, stats_path, strerror(errno));
		return 1;
	}
	struct ebq_value *per_cpu = calloc(ncpu, sizeof(*per_cpu));
	struct ebq_stats *st = calloc(ncpu, sizeof(*st));
	struct ebq_key key, next;
	void *prev = NULL;

	if (!per_cpu || !st)
		return 1;
	while (bpf_map_get_next_key(groups, prev, &next) == 0) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(groups, &key, per_cpu))
			continue; /* deleted meanwhile (a closed window) */
		struct ebq_value sum = {};
		for (int c = 0; c < ncpu; c++) {
			const struct ebq_value *v = &per_cpu[c];
			if (!v->count)
				continue; /* this CPU never saw the group */
			sum.count += v->count;
			sum.sum_0 += v->sum_0;
			if (v->max_1 > sum.max_1)
				sum.max_1 = v->max_1;
			for (int b = 0; b < EBQ_HIST_2_BUCKETS; b++)
				sum.hist_2[b] += v->hist_2[b];
		}
#if EBQ_KEY_HAS_WINDOW
		unsigned long long window = key.window;
#else
		unsigned long long window = 0; /* no WINDOW: one window, the whole run */
#endif
		printf("group window=%llu fd=%llu count=%llu sum=%llu max=%llu hist=", window,
		       (unsigned long long)key.c0_fd, (unsigned long long)sum.count, (unsigned long long)sum.sum_0,
		       (unsigned long long)sum.max_1);
		const char *sep = "";
		for (int b = 0; b < EBQ_HIST_2_BUCKETS; b++) {
			if (sum.hist_2[b]) {
				printf("%s%d:%llu", sep, b, (unsigned long long)sum.hist_2[b]);
				sep = ",";
			}
		}
		printf("\n");
	}
	__u32 zero = 0;
	if (bpf_map_lookup_elem(stats, &zero, st)) {
		perror("read stats");
		return 1;
	}
	unsigned long long seen = 0, matched = 0, dropped = 0;
	for (int c = 0; c < ncpu; c++) {
		seen += st[c].seen;
		matched += st[c].matched;
		dropped += st[c].dropped;
	}
	printf("stats seen=%llu matched=%llu dropped=%llu\n", seen, matched, dropped);
	return 0;
}
