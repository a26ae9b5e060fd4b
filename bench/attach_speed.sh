#!/usr/bin/env bash
# Real-time card speed (issue 4), all measured in this one run:
#  1. --timing none: 4K random read and write IOPS through the loop device
#     at 4 jobs x QD 32 (fio, libaio, O_DIRECT), next to the same fio on a
#     plain file in tmpfs. The store is in RAM (tmpfs) to measure the
#     emulator itself; the same write run with the store on disk follows,
#     where the host's write-back of the store to the disk sets the pace;
#  2. --timing model: fio's median completion latency at QD 1 next to the
#     model's own median latency for the same I/Os (from the daemon's
#     status), i.e. what the emulator adds on top of the model.
# Needs root, /dev/fuse and loop devices. RUNTIME (s) per fio run, default
# 10; REPS rounds of the IOPS runs, default 3 (medians reported).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p blockdev
BIN=$CARGO_TARGET_DIR/release/vsl-blockdev
RUNTIME=${RUNTIME:-10}
work=$(mktemp -d /tmp/openvsl-speed.XXXXXX)
export OPENVSL_RUN_DIR=$work/run
cleanup() {
  "$BIN" detach --all >/dev/null 2>&1 || true
  umount "$work/tmpfs" 2>/dev/null || true
  umount "$work/ramstore" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
CARD=(--device iodrive-duo-640-mlc --member 0 --scale 0.02)

# fio TARGET RW JOBS QD -> JSON on stdout
runfio() {
  fio --name=speed --filename="$1" --rw="$2" --bs=4k --direct=1 --ioengine=libaio \
    --numjobs="$3" --iodepth="$4" --group_reporting --time_based --runtime="$RUNTIME" \
    --size=1g --randrepeat=0 --output-format=json 2>/dev/null
}
iops() { python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))'; }
p50_us() { python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; d=j["read"] if j["read"]["total_ios"] else j["write"]; print(round(d["clat_ns"]["percentile"]["50.000000"]/1e3,1))'; }

# attach_fill STORE: attaches the card with --timing none, fills 1 GiB.
attach_fill() {
  dev=$("$BIN" attach --store "$1" "${CARD[@]}" --timing none | cut -f1)
  fio --name=fill --filename="$dev" --rw=write --bs=1m --direct=1 --size=1g --ioengine=libaio \
    --iodepth=8 --output-format=terse >/dev/null
}
# REPS rounds (default 3), each on a fresh RAM store and a fresh tmpfs
# file; the medians are reported, every round is printed.
med() { python3 -c 'import statistics,sys; print(round(statistics.median(float(x) for x in sys.argv[1:])))' "$@"; }
loop_ws=(); loop_rs=(); tmp_ws=(); tmp_rs=()
mkdir -p "$work/ramstore" "$work/tmpfs"
for rep in $(seq "${REPS:-3}"); do
  mount -t tmpfs -o size=12g tmpfs "$work/ramstore"
  attach_fill "$work/ramstore/store"
  loop_ws+=("$(runfio "$dev" randwrite 4 32 | iops)")
  loop_rs+=("$(runfio "$dev" randread 4 32 | iops)")
  "$BIN" detach --all >/dev/null
  umount "$work/ramstore"
  mount -t tmpfs -o size=1200m tmpfs "$work/tmpfs"
  fio --name=fill --filename="$work/tmpfs/f" --rw=write --bs=1m --size=1g --output-format=terse >/dev/null
  tmp_ws+=("$(runfio "$work/tmpfs/f" randwrite 4 32 | iops)")
  tmp_rs+=("$(runfio "$work/tmpfs/f" randread 4 32 | iops)")
  umount "$work/tmpfs"
  echo "round $rep: loop write ${loop_ws[-1]} read ${loop_rs[-1]}; tmpfs file write ${tmp_ws[-1]} read ${tmp_rs[-1]}"
done
loop_w=$(med "${loop_ws[@]}"); loop_r=$(med "${loop_rs[@]}")
tmp_w=$(med "${tmp_ws[@]}"); tmp_r=$(med "${tmp_rs[@]}")

attach_fill "$work/store"
disk_w=$(runfio "$dev" randwrite 4 32 | iops)
"$BIN" detach --all >/dev/null

dev=$("$BIN" attach --store "$work/store" --timing model | cut -f1)
fio_r=$(runfio "$dev" randread 1 1 | p50_us)
fio_w=$(runfio "$dev" randwrite 1 1 | p50_us)
status=$("$BIN" status --json)
"$BIN" detach --all >/dev/null
read -r model_r model_w late_p50 <<<"$(python3 -c '
import json,sys
m=json.loads(sys.argv[1])[0]["members"][0]
print(m["model_read_latency"]["p50_us"], m["model_write_latency"]["p50_us"], m["emulator_late"]["p50_us"])' "$status")"

python3 - "$loop_r" "$loop_w" "$tmp_r" "$tmp_w" "$fio_r" "$fio_w" "$model_r" "$model_w" "$late_p50" "$disk_w" <<'PY'
import sys
lr, lw, tr, tw = (float(x) for x in sys.argv[1:5])
fr, fw, mr, mw, late, dw = (float(x) for x in sys.argv[5:11])
print("timing none, 4K random, 4 jobs x QD 32 (fio, O_DIRECT), same run, median of the rounds:")
print(f"  loop device  read {lr/1e3:8.1f} K IOPS (target >= 100 K)   write {lw/1e3:8.1f} K IOPS (target >= 60 K)   [store in tmpfs]")
print(f"  tmpfs file   read {tr/1e3:8.1f} K IOPS                      write {tw/1e3:8.1f} K IOPS")
print(f"  ratio loop/tmpfs  read {lr/tr:.2f}   write {lw/tw:.2f}")
print(f"  store on disk instead: write {dw/1e3:8.1f} K IOPS (ratio to store in tmpfs {dw/lw:.2f})")
print("timing model, 4K random QD 1, median latency:")
print(f"  read : fio {fr:7.1f} us, model {mr:7.1f} us, added {fr-mr:6.1f} us (target <= 30)")
print(f"  write: fio {fw:7.1f} us, model {mw:7.1f} us, added {fw-mw:6.1f} us (target <= 30)")
print(f"  inside the daemon, acknowledgement after its due time: median {late:.1f} us")
print("  (since issue 13 the daemon answers at the model's completion less the model's host")
print("   software cost, 26 us read / 34 us write, which the kernel path spends instead)")
PY
