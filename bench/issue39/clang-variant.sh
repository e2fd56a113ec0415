#!/bin/bash
# Used by report_parts.sh: edits ebq's generated C (the file clang is given) by $VARIANT
# (each part named in it taken out: noname, noscope, nolock, nocommon, noaccess, nofold), then
# runs clang. See report_parts.sh.
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
    perl -0pi -e 's/\tebq_fold_common\(f->access, &f->access_used, ret\);\n\tebq_fold_common\(f->stride, \tebq_fold_common\(f->stride, &f->stride_used, stride\);\n// or die "clang-variant: no common-value tablesf->stride_used, stride\);\n/\t(void)stride;\n/ or die "clang-variant: no common-value tables to take out\n"' "$a"
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
