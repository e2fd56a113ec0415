// SPDX-License-Identifier: GPL-2.0
/*
 * Loads and attaches guard_holder.bpf.o (argv[1]), prints "attached", and
 * keeps the programs attached until its stdin closes. The links are the
 * process's file descriptors, so a killed holder leaves nothing attached.
 *
 *   gcc guard_holder.c -lbpf -o guard_holder
 */
#include <bpf/libbpf.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	char buf[64];

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJECT\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
	}
	printf("attached\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	bpf_object__close(obj);
	return 0;
}
