#!/usr/bin/env bash
# Our real-time engine vs fio on the same file, in the same run: 4 KiB
# randread and randwrite at 1x1, 4x16 and 16x16 (threads x QD), on a file in
# tmpfs (/dev/shm) and on a file on disk. Prints IOPS and ratio ours/fio
# (target within 10 %). Both use io_uring, the same direct flag, file, size,
# bs, iodepth, numjobs and runtime, and both run their workers as threads of
# one process (fio --thread); fio with its default one process per job is
# printed beside it. Runs alternate (ours, fio --thread, fio) per point.
#
# usage: bench/fio_agreement.sh [SECONDS per run, default 8] [SIZE, default 1G]
#   DISK_DIR=/some/dir to choose the on-disk directory (default /var/tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-8}
size=${2:-1G}
disk_dir=${DISK_DIR:-/var/tmp}
command -v fio >/dev/null || { echo "fio not found: run scripts/setup.sh" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p realtime --example rt_run
ours_bin="$CARGO_TARGET_DIR/release/examples/rt_run"

fio_iops() { # path rw threads qd direct [extra fio options]
  fio --name=agree --filename="$1" --size="$size" --bs=4k --rw="$2" \
    --ioengine=io_uring --direct="$5" --iodepth="$4" --numjobs="$3" \
    --runtime="$secs" --time_based --group_reporting --norandommap \
    --randrepeat=0 --output-format=json "${@:6}" 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % (j["read"]["iops"]+j["write"]["iops"]))'
}
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

echo "fio_agreement: $(fio --version), ${secs}s per run, ${size} file, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-10s %-6s %-7s %10s %12s %6s %13s %6s\n' place rw TxQD direct ours "fio --thread" ratio "fio (procs)" ratio
trap 'rm -f /dev/shm/openvsl-fio-agree "$disk_dir/openvsl-fio-agree"' EXIT
for place in tmpfs disk; do
  if [ "$place" = tmpfs ]; then path=/dev/shm/openvsl-fio-agree; else path="$disk_dir/openvsl-fio-agree"; fi
  target="file:$path:$size"
  # Fill once so reads hit written blocks (not unwritten extents).
  "$ours_bin" "$target" randread 4k 1 1 0.1 fill >/dev/null 2>&1
  for rw in randread randwrite; do
    for tq in 1x1 4x16 16x16; do
      t=${tq%x*}; q=${tq#*x}
      j=$("$ours_bin" "$target" "$rw" 4k "$t" "$q" "$secs")
      ours=$(field "$j" iops); direct=$(field "$j" direct)
      d=0; [ "$direct" = True ] && d=1
      theirs=$(fio_iops "$path" "$rw" "$t" "$q" "$d" --thread)
      procs=$(fio_iops "$path" "$rw" "$t" "$q" "$d")
      ratio=$(python3 -c "print('%.2f' % ($ours / $theirs))")
      ratio_p=$(python3 -c "print('%.2f' % ($ours / $procs))")
      printf '%-6s %-10s %-6s %-7s %10.0f %12.0f %6s %13.0f %6s\n' "$place" "$rw" "$tq" "$d" "$ours" "$theirs" "$ratio" "$procs" "$ratio_p"
    done
  done
done
