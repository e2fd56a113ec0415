#!/bin/bash
# Used by report_parts.sh: edits ebq's generated C (the file clang is given) by $VARIANT
# (each part named in it taken out: noname, noscope, nolock, nocommon, noaccess, nofold;
# nolookup with one per-CPU record for every file instead of the file's, nokind
# with every system call a pread64; noprologue without the record's mount, block size and name checks; relunlock gives the lock back by a plain store, emptystr writes an empty string's first byte only)
# then runs clang. See report_parts.sh. A part not found fails the compile.
set -e
for a in "$@"; do case "$a" in *.bpf.c)
  if [[ $VARIANT == *noname* ]]; then
    sed -i 's/^\tebq_file_name(fc_file, fc_file_name);$/\t(void)fc_file_name;/; s/^\tbpf_probe_read_kernel(r->c7_file_name, sizeof(r->c7_file_name), start_fc_file_name);$/\t(void)start_fc_file_name;/; s/^\t__builtin_memcpy(s->c4_e_file_name, fc_file_name, sizeof(s->c4_e_file_name));$//; s/^\t__builtin_memset(s->c4_e_file_name, 0, sizeof(s->c4_e_file_name));$//' "$a"
    grep -q '(void)start_fc_file_name;' "$a" || { echo "clang-variant: no file name copy to take out" >&2; exit 1; }
  fi
  if [[ $VARIANT == *noscope* ]]; then
    perl -0pi -e 's/(int ebq_pair_start\(__u64 \*ctx\)\n\{\n[^\n]*\n[^\n]*\n)\tif \(!ebq_in_scope\(pid_tgid >> 32\)\)\n\t\treturn 0;\n/$1/ or die "clang-variant: no scope check to take out\n"' "$a"
  fi
  if [[ $VARIANT == *nolock* ]]; then
    perl -0pi -e 's/\tif \(!ebq_fold_lock\(f\)\)\n\t\treturn 1;\n// or die "clang-variant: no lock to take out\n"; s/\tebq_fold_unlock\(f\);\n//' "$a"
  fi
  if [[ $VARIANT == *nocommon* ]]; then
    perl -0pi -e 's/\tebq_fold_common\(f->access, f->access_seen, &f->access_used, ret\);\n\tebq_fold_common\(f->stride, f->stride_seen, &f->stride_used, stride\);\n/\t(void)stride;\n/ or die "clang-variant: no common-value tables to take out\n"' "$a"
  fi
  if [[ $VARIANT == *relunlock* ]]; then
    perl -0pi -e 's/__sync_lock_test_and_set\(&f->lock, 0\);/asm volatile("" ::: "memory");\n\t*(volatile __u32 *)&f->lock = 0;/ or die "clang-variant: no unlock to replace\n"' "$a"
  fi
  if [[ $VARIANT == *emptystr* ]]; then
    perl -0pi -e 's/\t__builtin_memset\((r->\w+), 0, sizeof\(\1\)\);\n\t__builtin_memcpy\(\1, "", 1\);\n/\t$1\[0\] = 0;\n/g or die "clang-variant: no empty string to replace\n"' "$a"
  fi
  if [[ $VARIANT == *noprologue* ]]; then
    perl -0pi -e 's/\tif \(r->EBQ_ROW_mount_point\[0\]\) \{.*?\n\t\}\n(\tebq_fold_add)/$1/s or die "clang-variant: no block size to take out\n"; s/\tif \(!f->fs_type\[0\] && !f->mount_id\) \{.*?\n\t\}\n//s or die "clang-variant: no mount to take out\n"; s/\tif \(!f->name\[0\]\) \{.*?\n\t\}\n//s or die "clang-variant: no name to take out\n"' "$a"
  fi
  if [[ $VARIANT == *nolookup* ]]; then
    perl -0pi -e 's/(static __always_inline int ebq_fold_operation\()/struct {\n\t__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);\n\t__uint(max_entries, 1);\n\t__type(key, __u32);\n\t__type(value, struct ebq_fold_file);\n} ebq_fold_cpu_record SEC(".maps");\n\n$1/ or die "clang-variant: no fold\n"; s/\tf = ebq_fold_record\(&key\);\n/\tf = bpf_map_lookup_elem(&ebq_fold_cpu_record, &(__u32){0});\n/ or die "clang-variant: no record lookup to replace\n"' "$a"
  fi
  if [[ $VARIANT == *nokind* ]]; then
    perl -0pi -e 's/\t\t__u32 call = ebq_fold_call\(id\);\n/\t\t__u32 call = EBQ_FOLD_READ | EBQ_FOLD_CALL_POSITIONED;\n/ or die "clang-variant: no kind to replace\n"' "$a"
  fi
  if [[ $VARIANT == *noaccess* ]]; then
    perl -0pi -e 's/(static __always_inline void ebq_fold_access\([^)]*\)\n\{\n)/$1\tif (r->EBQ_ROW_time != 1)\n\t\treturn;\n/ or die "clang-variant: no read and write branch to take out\n"' "$a"
  fi
  if [[ $VARIANT == *nofold* ]]; then
    perl -0pi -e 's/(static __always_inline int ebq_fold\(struct ebq_row \*r\)\n\{\n)/$1\tif (r->EBQ_ROW_time != 1)\n\t\treturn 0;\n/ or die "clang-variant: no fold to take out\n"' "$a"
  fi
  ;;
esac; done
exec clang "$@"
