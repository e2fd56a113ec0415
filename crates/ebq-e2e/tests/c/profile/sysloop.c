/* A system-call-heavy program for tests/e2e/mixed_stacks.rs: writes one byte
 * to /dev/null argv[1] times, so its profile samples fall both in user code
 * (the loop, libc's wrapper) and in the kernel (the write). Built with frame
 * pointers like spin.c: its user stacks unwind to the same few frames, so the
 * stack map holds a handful of stacks (dd's, built without frame pointers,
 * unwind through stale frame pointers into hundreds of distinct stacks, and a
 * distinct stack landing in a taken bucket of the stack map is dropped). */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static long write_bytes(int fd, long n)
{
	char c = 0;
	long done = 0;
	for (long i = 0; i < n; i++)
		done += write(fd, &c, 1);
	return done;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0)
		return 3;
	long n = atol(argv[1]);
	return write_bytes(fd, n) == n ? 0 : 1;
}
