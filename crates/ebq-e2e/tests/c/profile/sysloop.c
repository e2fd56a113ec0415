/* A program for tests/e2e/mixed_stacks.rs whose time is split between the
 * kernel and user code: argv[1] times it reads 1 MiB of /dev/zero (the
 * kernel clears the buffer) and sums the buffer in user code, so its profile
 * samples fall in both halves.
 *
 * Each system call does tens of microseconds of work on purpose. Another
 * tracer's classic tracepoint programs on the system-call path (syscount,
 * a bpftrace `raw_syscalls` one-liner) block every perf-event program on the
 * CPU while they run, and the kernel skips such a sample without counting it,
 * for ebq and bpftrace alike. With one-byte writes, that was most of the
 * loop's time: each tool lost a different share of a third of its samples,
 * and their counts could not be compared. At tens of thousands of calls a
 * second the share is a few percent.
 *
 * Built with frame pointers like spin.c: its user stacks unwind to the same
 * few frames, so the stack map holds a handful of stacks (dd's, built without
 * frame pointers, unwind through stale frame pointers into hundreds of
 * distinct stacks, and a distinct stack landing in a taken bucket of the stack
 * map is dropped). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static unsigned long buf[1024 * 1024 / sizeof(unsigned long)];
/* Where the sums go, so the compiler keeps the user-code half. */
volatile unsigned long ebq_sysloop_sink;

__attribute__((noinline)) static unsigned long sum_buffer(void)
{
	unsigned long sum = 0;
	for (unsigned long i = 0; i < sizeof(buf) / sizeof(buf[0]); i++)
		sum += buf[i] ^ i;
	return sum;
}

__attribute__((noinline)) static long read_and_sum(int fd, long n)
{
	long done = 0;
	for (long i = 0; i < n; i++) {
		done += read(fd, buf, sizeof(buf)) == sizeof(buf);
		ebq_sysloop_sink += sum_buffer();
	}
	return done;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return 3;
	long n = atol(argv[1]);
	return read_and_sum(fd, n) == n ? 0 : 1;
}
