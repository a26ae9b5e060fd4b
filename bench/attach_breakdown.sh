#!/usr/bin/env bash
# Where the time of one I/O on the attached card goes (issue 13): fio on the
# loop device (random, O_DIRECT, libaio) at 4 KiB and 16 KiB, QD 1 and 32,
# reads and writes, timing model, store on disk and in tmpfs; next to fio's
# mean completion latency, the daemon's own view of the same I/Os:
#   wall    receipt of the FUSE request to its answer, inside the daemon;
#   service receipt to the engine's return (lock, model, store I/O);
#   model   the model's latency (incl. its host software cost);
#   late    answer minus the time the model says to answer.
# kernel path = fio − wall (block layer, loop, FUSE transport, client wake-up).
# Each point on a fresh attachment of the same store (fresh counters).
# Needs root, /dev/fuse and loop devices. RUNTIME (s) per point, default 6.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p blockdev
BIN=$CARGO_TARGET_DIR/release/vsl-blockdev
RUNTIME=${RUNTIME:-6}
work=$(mktemp -d "${STORE_PARENT:-/var/tmp}/openvsl-breakdown.XXXXXX")
export OPENVSL_RUN_DIR=$work/run
cleanup() {
  "$BIN" detach --all >/dev/null 2>&1 || true
  umount "$work/ram" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
CARD=(--device iodrive-160-slc --scale 0.1)
printf "%-5s %-5s %-5s %-4s | %9s %9s | %9s %9s %9s %9s | %s\n" store rw bs qd "fio IOPS" "fio mean" wall service model late "kernel path (us, means)"
mkdir -p "$work/ram"
mount -t tmpfs -o size=18g tmpfs "$work/ram"
for where in disk tmpfs; do
  store=$work/store; [ $where = tmpfs ] && store=$work/ram/store
  dev=$("$BIN" attach --store "$store" "${CARD[@]}" --timing none | cut -f1)
  fio --name=fill --filename="$dev" --rw=write --bs=1m --direct=1 --size=2g --ioengine=libaio \
    --iodepth=8 --output-format=terse >/dev/null
  "$BIN" detach --all >/dev/null
  for rw in randread randwrite; do
    for bs in 4k 16k; do
      for qd in 1 32; do
        dev=$("$BIN" attach --store "$store" --timing model | cut -f1)
        fio=$(fio --name=b --filename="$dev" --rw=$rw --bs=$bs --direct=1 --ioengine=libaio \
          --iodepth=$qd --size=2g --time_based --runtime="$RUNTIME" --randrepeat=0 \
          --output-format=json 2>/dev/null)
        st=$("$BIN" status --json)
        "$BIN" detach --all >/dev/null
        python3 - "$where" "$rw" "$bs" "$qd" "$fio" "$st" <<'PY'
import json,sys
where,rw,bs,qd=sys.argv[1:5]
j=json.loads(sys.argv[5])["jobs"][0]
d=j["read"] if rw=="randread" else j["write"]
m=json.loads(sys.argv[6])[0]["members"][0]
w=m["read_latency" if rw=="randread" else "write_latency"]["mean_us"]
mod=m["model_read_latency" if rw=="randread" else "model_write_latency"]["mean_us"]
sv=m["service_latency"]["mean_us"]; late=m["emulator_late"]["mean_us"]
f=d["clat_ns"]["mean"]/1e3
print("%-5s %-5s %-5s %-4s | %9.0f %9.1f | %9.1f %9.1f %9.1f %9.1f | %.1f" % (where, rw[4:], bs, qd, d["iops"], f, w, sv, mod, late, f-w))
PY
      done
    done
  done
done
