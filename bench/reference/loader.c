/* Loader of the reference programs (ebq bench pervent): libbpf without a skeleton.
 *
 *   loader PROG.bpf.o [ROWS_OUT]
 *
 * Opens and loads the object, attaches every program by its section name,
 * prints "attached" on stderr, then waits for SIGINT/SIGTERM. If the object has
 * a ring buffer map named "rows", it consumes it (polling every 50 ms) and writes
 * one text line per record ("time pid count") to ROWS_OUT (default /dev/null).
 * On exit it prints, on stderr, "map NAME total N" for each map named "events",
 * "dropped" or "sum_…" (the first u64 of every entry, summed over CPUs) and
 * "rows delivered N". */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct row {
	unsigned long long time, count;
	unsigned int pid, pad;
};

static volatile sig_atomic_t stop;
static FILE *out;
static unsigned long long delivered;

static void on_signal(int sig) { (void)sig; stop = 1; }

static int on_row(void *ctx, void *data, size_t size)
{
	const struct row *r = data;

	(void)ctx;
	if (size < sizeof(*r))
		return 0;
	fprintf(out, "%llu %u %llu\n", r->time, r->pid, r->count);
	delivered++;
	return 0;
}

static unsigned long long map_total(struct bpf_map *map)
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(map);
	int percpu = bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_ARRAY ||
		     bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_HASH;
	size_t vsize = bpf_map__value_size(map), stride = percpu ? ((vsize + 7) & ~7UL) : vsize;
	size_t ksize = bpf_map__key_size(map);
	char key[128], next[128], *val = calloc(percpu ? ncpu : 1, stride);
	unsigned long long total = 0;
	void *prev = NULL;

	if (!val || ksize > sizeof(key))
		return 0;
	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, ksize);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, val))
			continue;
		for (int c = 0; c < (percpu ? ncpu : 1); c++)
			total += *(unsigned long long *)(val + c * stride);
	}
	free(val);
	return total;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map, *rows;
	struct ring_buffer *rb = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROG.bpf.o [ROWS_OUT]\n", argv[0]);
		return 2;
	}
	out = fopen(argc > 2 ? argv[2] : "/dev/null", "w");
	if (!out) {
		perror("ROWS_OUT");
		return 1;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || libbpf_get_error(obj)) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		struct bpf_link *link = bpf_program__attach(prog);

		if (!link || libbpf_get_error(link)) {
			fprintf(stderr, "cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
	}
	rows = bpf_object__find_map_by_name(obj, "rows");
	if (rows) {
		rb = ring_buffer__new(bpf_map__fd(rows), on_row, NULL, NULL);
		if (!rb) {
			fprintf(stderr, "cannot open the ring buffer\n");
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "attached\n");
	while (!stop) {
		if (rb)
			ring_buffer__poll(rb, 50);
		else
			pause();
	}
	if (rb)
		ring_buffer__consume(rb);
	fflush(out);
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);

		if (!strcmp(name, "events") || !strcmp(name, "dropped") || !strncmp(name, "sum_", 4))
			fprintf(stderr, "map %s total %llu\n", name, map_total(map));
	}
	if (rb)
		fprintf(stderr, "rows delivered %llu\n", delivered);
	return 0;
}
