/* The workload of clocks.sh: COUNT pread64 calls of BS bytes at random
 * BS-aligned offsets of FILE (O_DIRECT when the 4th argument is 1), each
 * bracketed by clock_gettime(CLOCK_MONOTONIC) in the caller, as Darshan times
 * a call. Prints "calls N bracket_ns S": its own tally, the truth. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long bs, count, blocks, calls = 0;
	long long sum = 0;
	void *buf;
	int fd;

	if (argc < 5) {
		fprintf(stderr, "usage: clockwork FILE BS COUNT DIRECT\n");
		return 2;
	}
	bs = atol(argv[2]);
	count = atol(argv[3]);
	fd = open(argv[1], O_RDONLY | (atoi(argv[4]) ? O_DIRECT : 0));
	if (fd < 0 || posix_memalign(&buf, 4096, bs)) {
		perror(argv[1]);
		return 1;
	}
	blocks = lseek(fd, 0, SEEK_END) / bs;
	srandom(42);
	for (long i = 0; i < count; i++) {
		off_t off = (random() % blocks) * bs;
		long long t0 = now();

		if (pread(fd, buf, bs, off) != bs) {
			perror("pread");
			return 1;
		}
		sum += now() - t0;
		calls++;
	}
	printf("calls %ld bracket_ns %lld\n", calls, sum);
	return 0;
}
