/* The semaphore-guarded probe of sdt_fire.c, in its own file: with
 * _SDT_HAS_SEMAPHORES every probe of a file records a semaphore. Built at -O0
 * so its arguments are memory operands (`8@-16(%rbp)`). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

__extension__ unsigned short ebqtest_guarded_semaphore __attribute__((unused)) __attribute__((section(".probes")));

const char *sdt_name(int i);

/* 1 when the probe fired (the semaphore was set), else 0. */
int sdt_guarded(int i)
{
	if (!ebqtest_guarded_semaphore)
		return 0;
	long long big = -(i + 1) * 1000000007LL;
	short small = (short)-i;
	const char *name = sdt_name(i);
	DTRACE_PROBE3(ebqtest, guarded, big, small, name);
	return 1;
}
