/* A CPU-bound program for tests/profile.rs: pinned to CPU argv[1], it spins
 * in spin_hot() for argv[2] seconds of wall time, then prints as JSON its
 * CLOCK_MONOTONIC start and end (ns, the clock of ebq's `time`) and its own
 * CPU time (getrusage: user + system, in ns). Built -O1 -fno-inline with
 * frame pointers so its user stacks unwind as main → spin_hot. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

volatile unsigned long sink;

__attribute__((noinline)) void spin_hot(double until)
{
	unsigned long x = 1;
	while (now() < until) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		sink = x;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(atoi(argv[1]), &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		return 3;
	long long start = now_ns();
	spin_hot(now() + atof(argv[2]));
	long long end = now_ns();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long long ns = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
	printf("{\"start_ns\": %lld, \"end_ns\": %lld, \"cpu_ns\": %lld}\n", start, end, ns);
	return 0;
}
