/* Drives libfakempiio for ebq's uprobe tests: waits until WAIT_FILE exists
 * (so the probes are attached), then makes N calls of MPI_File_write_at to
 * OUT_FILE: call i writes (i % 7 + 1) * 100 bytes at offset i * 4096. After
 * each call it runs its own static function block_sum (a .symtab-only symbol)
 * on the bytes written, which returns i % 7 + 1. Last, one call on a bad
 * descriptor writes 0 bytes at offset 0 and fails (returns -1).
 *
 *   driver WAIT_FILE N OUT_FILE */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int MPI_File_write_at(void *fh, long long offset, const void *buf, int count, int datatype, void *status);

static char buf[700];

/* Returns count / 100; kept out of line so it has its own entry and return. */
__attribute__((noinline)) static long block_sum(const char *p, long count)
{
	long s = 0;

	for (long i = 0; i < count; i++)
		s += p[i];
	__asm__ volatile("" : : "r"(s) : "memory");
	return count / 100;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	long n = atol(argv[2]);
	int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return 1;
	memset(buf, 'x', sizeof(buf));
	/* Give up after 60 s, so a failed test leaves no process behind. */
	for (int waited = 0; access(argv[1], F_OK) != 0; waited++) {
		if (waited == 60000)
			return 3;
		usleep(1000);
	}
	long total = 0;
	for (long i = 0; i < n; i++) {
		int count = (int)(i % 7 + 1) * 100;

		if (MPI_File_write_at(&fd, i * 4096LL, buf, count, 0, NULL) != 0)
			return 1;
		total += block_sum(buf, count);
	}
	close(fd);
	int bad = -1;

	if (MPI_File_write_at(&bad, 0, buf, 0, 0, NULL) != -1)
		return 1;
	return total > 0 ? 0 : 1;
}
