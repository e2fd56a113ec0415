/* A burst of pread64 calls: `pread_burst [N]` (default 300000) reads 1 byte of
 * /dev/zero N times as fast as it can, then prints N and the seconds it took.
 * Built static (gcc -O2 -static) so no loader runs a pread64 of its own under
 * this comm: a query filtering on the comm sees exactly N calls. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	int fd = open("/dev/zero", O_RDONLY);
	char c;
	struct timespec t0, t1;

	if (fd < 0 || n < 0)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++)
		if (pread(fd, &c, 1, 0) != 1)
			return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%ld pread64 calls in %.3f s\n", n, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
