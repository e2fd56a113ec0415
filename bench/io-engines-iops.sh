#!/bin/bash
# fio 4 KiB randread on tmpfs: IOPS per engine, bare and under the path's aggregate query.
E=${EBQ:-$(dirname "$0")/../target/release/ebq}
F=/dev/shm/ebq-iops-data
head -c $((64<<20)) /dev/zero > $F
INO=$(stat -c %i $F)
fio_cmd() { echo "fio --name=j --filename=$F --ioengine=$1 --rw=randread --bs=4k --size=64M --time_based --runtime=4 --output-format=json --output=${TMPDIR:-/tmp}/ebq-iops-iops-$1.json"; }
iops() { python3 -c "import json;print(round(json.load(open('${TMPDIR:-/tmp}/ebq-iops-iops-$1.json'))['jobs'][0]['read']['iops']))"; }
q() {
  case $1 in
    sync) c=read;; psync|posixaio) c=pread64;; pvsync2) c=preadv2;;
  esac
  case $1 in
    io_uring) echo "SELECT req.opcode, COUNT(*), SUM(cqe.res) FROM io_uring.io_uring_complete WHERE req.file.f_inode.i_ino = $INO GROUP BY req.opcode";;
    mmap) echo "SELECT COUNT(*), COUNT(*) * 4096 FROM filemap.mm_filemap_fault WHERE i_ino = $INO";;
    *) echo "SELECT e.fs_type, COUNT(*), SUM(x.ret) FROM syscalls.sys_enter_$c e JOIN syscalls.sys_exit_$c x ON e.tid = x.tid WHERE e.inode = $INO GROUP BY e.fs_type";;
  esac
}
for round in 1 2; do
for eng in sync psync pvsync2 posixaio io_uring mmap; do
  $(fio_cmd $eng) ; bare=$(iops $eng)
  $E --attach raw -c "$(fio_cmd $eng)" "$(q $eng)" > /dev/null 2>${TMPDIR:-/tmp}/ebq-iops-iops-ebq.err; traced=$(iops $eng)
  echo "round $round $eng bare=$bare traced=$traced $(tail -1 ${TMPDIR:-/tmp}/ebq-iops-iops-ebq.err | cut -c1-80)"
done
done
rm -f $F
rm -f "${TMPDIR:-/tmp}"/ebq-iops-iops-*
