/* Two programs that do nothing: the price of running on every system call. */
#include "common.h"

SEC("tp_btf/sys_enter")
int BPF_PROG(enter, struct pt_regs *regs, long id) { return 0; }

SEC("tp_btf/sys_exit")
int BPF_PROG(leave, struct pt_regs *regs, long ret) { return 0; }
