/* USDT probes for tests/usdt.rs, built with <sys/sdt.h> (systemtap-sdt-dev).
 *
 * sdt_fire GO N waits until the file GO exists (ebq has attached), then fires
 * N times, at -O2 (register and constant operands):
 *   ebqtest:plain(i, name, -(i + 1), -7)   unguarded: int, const char *, negative int, constant
 * and calls sdt_guarded(i) (sdt_guarded.c, -O0: memory operands), which fires
 *   ebqtest:guarded(-(i + 1) * 1000000007LL, (short)-i, name)
 * only while its semaphore is set. It prints its own tally as JSON:
 * {"plain": N, "guarded": times the semaphore was seen set, "sum_i": Σ i,
 *  "name_bytes": Σ strlen(name)}. Measuring the names also touches their page
 * of .rodata: BPF cannot fault a page in, so a string the program never read
 * would not be readable at the probe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sdt.h>
#include <sys/stat.h>
#include <unistd.h>

const char *sdt_name(int i);
int sdt_guarded(int i);

const char *sdt_name(int i)
{
	static const char *names[] = { "alpha", "beta", "gamma-delta" };
	return names[i % 3];
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	struct stat st;
	while (stat(argv[1], &st) != 0)
		usleep(1000);
	int n = atoi(argv[2]);
	long guarded = 0, sum_i = 0, name_bytes = 0;
	for (int i = 0; i < n; i++) {
		const char *name = sdt_name(i);
		name_bytes += strlen(name);
		DTRACE_PROBE4(ebqtest, plain, i, name, -(i + 1), -7);
		guarded += sdt_guarded(i);
		sum_i += i;
	}
	printf("{\"plain\": %d, \"guarded\": %ld, \"sum_i\": %ld, \"name_bytes\": %ld}\n", n, guarded, sum_i, name_bytes);
	return 0;
}
