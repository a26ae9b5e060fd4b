#!/usr/bin/env bash
# How much of its model an attached card delivers under a heavy and a light
# load (docs/ATTACH_PERF.md, tenth round), against baselines measured in
# the same run:
#   heavy  fio 4 KiB random write, 16 jobs x QD 16 (the review's 16T/16Q),
#          on a fresh card, with fio's libaio and with its io_uring engine
#          (the lab's own engine for a real target is io_uring): the
#          model's burst is far above what the host path carries, so this
#          measures the path;
#   light  fio 4 KiB random write, then read, 4 jobs x QD 1, after a 2 GiB
#          sequential fill, with the daemon's lateness over each point.
# Each on a fresh attach of the 640 MLC's ioDimm 0 (`--scale 0.03`, store in
# /dev/shm), in four configurations: the defaults, `--rt-priority off`,
# `--fuse-uring off` and `--timing none` (the path's own ceiling, the
# baseline of the heavy point); the light points' baseline is the model in
# virtual time (`vsl run`, same pattern). RUNTIME (s) per point, default
# 10. Needs root, /dev/fuse, loop devices and fio; about 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p vsl -p blockdev
VSL=$CARGO_TARGET_DIR/release/vsl
DAEMON_CLI=$CARGO_TARGET_DIR/release/vsl-blockdev
RUNTIME=${RUNTIME:-10}
command -v fio >/dev/null || { echo "attach_load: fio is missing (run scripts/setup.sh)" >&2; exit 1; }
W=$(mktemp -d /dev/shm/attach_load.XXXXXX)
export OPENVSL_RUN_DIR=$W/run OPENVSL_STATE_DIR=$W/state
trap '"$VSL" detach --all >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD); load: $(cut -d' ' -f1-3 /proc/loadavg)"

# fio's IOPS and mean completion latency (us) of one direction, from JSON.
fio_point() { # dev rw jobs qd [engine]
  fio --name=p --filename="$1" --rw="$2" --bs=4k --direct=1 --ioengine="${5:-libaio}" --iodepth="$4" \
    --numjobs="$3" --group_reporting --time_based --runtime="$RUNTIME" --size=2G \
    --output-format=json | python3 -c '
import json,sys
j=json.load(sys.stdin)["jobs"][0]; d="write" if "write" in sys.argv[1] else "read"
print(round(j[d]["iops"]), round(j[d]["clat_ns"]["mean"]/1000,1))' "$2"
}
# The FUSE ring threads' answers so far and their summed lateness (us),
# from the daemon's status (`vsl-blockdev status --json`).
lateness() {
  "$DAEMON_CLI" status --json | python3 -c '
import json,sys
f=json.load(sys.stdin)[0].get("fuse_entries") or {}
n=f.get("answers",0)
print(n, n*(f.get("late_waiting_mean_us",0)+f.get("late_working_mean_us",0)))'
}
model_point() { # rw
  "$VSL" run --member 0 --scale 0.03 --rw "$1" --bs 4k --threads 4 --qd 1 --duration 5s \
    --json "$W/model.json" >/dev/null
  python3 -c '
import json,sys
r=json.load(open(sys.argv[1]))["summary"]
print(round(r["iops"]), round(r["lat_avg_us"],1))' "$W/model.json"
}
read -r mw_iops mw_lat <<<"$(model_point randwrite)"
read -r mr_iops mr_lat <<<"$(model_point randread)"

declare -A heavy heavy_uring light_w light_r
configs=("defaults:" "rt-off:--rt-priority off" "fuse-dev:--fuse-uring off" "timing-none:--timing none")
printf '%-12s %10s %11s %10s %10s %9s %10s %9s %9s\n' config heavy_iops heavy_uring write_iops write_us late_us read_iops read_us late_us
for c in "${configs[@]}"; do
  name=${c%%:*}; opts=${c#*:}
  rm -rf "$W/store"
  # shellcheck disable=SC2086
  dev=$("$VSL" attach --store "$W/store" --member 0 --scale 0.03 $opts | cut -f1)
  read -r h _ <<<"$(fio_point "$dev" randwrite 16 16)"
  heavy[$name]=$h
  "$VSL" detach --all >/dev/null
  rm -rf "$W/store"
  # shellcheck disable=SC2086
  dev=$("$VSL" attach --store "$W/store" --member 0 --scale 0.03 $opts | cut -f1)
  read -r hu _ <<<"$(fio_point "$dev" randwrite 16 16 io_uring)"
  heavy_uring[$name]=$hu
  "$VSL" detach --all >/dev/null
  rm -rf "$W/store"
  # shellcheck disable=SC2086
  dev=$("$VSL" attach --store "$W/store" --member 0 --scale 0.03 $opts | cut -f1)
  fio --name=fill --filename="$dev" --rw=write --bs=1M --direct=1 --ioengine=libaio --iodepth=8 \
    --size=2G --output=/dev/null
  out=("$h" "$hu")
  for rw in randwrite randread; do
    read -r n0 l0 <<<"$(lateness)"
    read -r iops lat <<<"$(fio_point "$dev" "$rw" 4 1)"
    read -r n1 l1 <<<"$(lateness)"
    late=$(python3 -c 'import sys; n=float(sys.argv[3])-float(sys.argv[1]); print("-" if n<=0 else round((float(sys.argv[4])-float(sys.argv[2]))/n,1))' "$n0" "$l0" "$n1" "$l1")
    out+=("$iops" "$lat" "$late")
  done
  "$VSL" detach --all >/dev/null
  light_w[$name]=${out[2]}
  light_r[$name]=${out[5]}
  printf '%-12s %10s %11s %10s %10s %9s %10s %9s %9s\n' "$name" "${out[@]}"
done
printf '%-12s %10s %11s %10s %10s %9s %10s %9s\n' model "" "" "$mw_iops" "$mw_lat" "" "$mr_iops" "$mr_lat"
echo "heavy (16 jobs x QD 16 4K random write, fresh card) against --timing none (the path's ceiling):"
for c in defaults rt-off fuse-dev; do
  python3 -c 'import sys; a,b,c,d=map(int,sys.argv[2:]); print(f"  {sys.argv[1]:12s} libaio {a:>7} / {b} = {a/b:.2f}   io_uring client {c:>7} / {d} = {c/d:.2f}")' \
    "$c" "${heavy[$c]}" "${heavy[timing-none]}" "${heavy_uring[$c]}" "${heavy_uring[timing-none]}"
done
echo "light (4 jobs x QD 1) against the model (late_us above: the ring threads' mean lateness; - over /dev/fuse):"
for c in defaults rt-off fuse-dev timing-none; do
  python3 -c 'import sys; w,r,mw,mr=map(int,sys.argv[2:]); print(f"  {sys.argv[1]:12s} write {w:>6} / {mw} = {w/mw:.2f}   read {r:>6} / {mr} = {r/mr:.2f}")' \
    "$c" "${light_w[$c]}" "${light_r[$c]}" "$mw_iops" "$mr_iops"
done
