#!/usr/bin/env bash
# The attached card against the model (issue 13), all measured in this one
# run, store on the local disk:
#  1. `vsl attach` of the ioDrive 160 GB SLC (`--scale 0.1`, timing model),
#     ext4 on its loop device, sysbench fileio (16 KiB, O_DIRECT, 8 GiB of
#     files, sysbench's default fsync every 100 requests) rndrd and rndwr at
#     1, 4 and 16 threads (no fsyncs: FSYNC_FREQ, default 0), the card
#     first written whole sequentially as `vsl run --precondition` does,
#     the write points in steady state (WRITE_WARMUP, WRITE_SETTLE);
#  2. `vsl run` of the same card and pattern in virtual time (16 KiB random,
#     N threads x QD 1 over 8 GiB, preconditioned; writes after a warm-up);
#  3. the disk's own sequential write speed with fdatasync (dd), the bound
#     on any store that makes flushed writes durable on it;
#  4. --timing none: fio 4 KiB random read / write, 4 jobs x QD 32, on the
#     attached card and on a plain file on the same disk.
# Prints per point the attached MiB/s, the model's, and their ratio (target
# within 15 %), and the daemon's own breakdown of the attached run (its work
# per I/O, its lateness, flush latency).
# Needs root, /dev/fuse, loop devices, sysbench, mkfs.ext4.
# RUNTIME (s) per sysbench point, default 15; SIZE of the files, default 8G;
# THREADS, default "1 4 16"; MODES, default "rndrd rndwr"; WRITE_WARMUP (s),
# default 120 (see runmodel); WRITE_SETTLE (s), default 30 (see runsb);
# ATTACH_OPTS, extra
# `vsl attach` options (e.g. "--prefault off", "--fuse-uring off");
# STORE_PARENT, default /var/tmp (must be on the disk under test).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p blockdev -p vsl
BIN=$CARGO_TARGET_DIR/release/vsl-blockdev
VSL=$CARGO_TARGET_DIR/release/vsl
RUNTIME=${RUNTIME:-15}
SIZE=${SIZE:-8G}
THREADS=${THREADS:-1 4 16}
for t in sysbench mkfs.ext4; do
  command -v $t >/dev/null || { echo "attach_model: $t is missing (run scripts/setup.sh)" >&2; exit 1; }
done
work=$(mktemp -d "${STORE_PARENT:-/var/tmp}/openvsl-model.XXXXXX")
export OPENVSL_RUN_DIR=$work/run
cleanup() {
  umount "$work/fs" 2>/dev/null || true
  "$BIN" detach --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
CARD=(--device iodrive-160-slc --scale 0.1)
# Extra attach options, e.g. ATTACH_OPTS="--fuse-uring off" (the default
# transport is FUSE over io_uring when the kernel allows it).
read -r -a EXTRA <<<"${ATTACH_OPTS:-}"

dd if=/dev/zero of="$work/dd" bs=1M count=1024 conv=fdatasync 2>"$work/dd.log"
disk_mbs=$(python3 -c 'import re,sys; m=re.search(r"([0-9.]+) ([MG])B/s", open(sys.argv[1]).read()); print(float(m[1])*(1000 if m[2]=="G" else 1))' "$work/dd.log")
rm -f "$work/dd"

# (Re)attaches the card and mounts its ext4: fresh daemon counters.
attach_mount() {
  umount "$work/fs" 2>/dev/null || true
  "$BIN" detach --all >/dev/null 2>&1 || true
  dev=$("$BIN" attach --store "$work/store" "${CARD[@]}" "${EXTRA[@]}" --timing model | cut -f1)
  mkdir -p "$work/fs"
  mount "$dev" "$work/fs"
}
# --timing none, store on disk: fio 4 KiB random, 4 jobs x QD 32, on the
# loop device and on a plain file on the same disk.
fio4k() {
  fio --name=speed --filename="$1" --rw="$2" --bs=4k --direct=1 --ioengine=libaio --numjobs=4 \
    --iodepth=32 --group_reporting --time_based --runtime=10 --size=1g --randrepeat=0 \
    --output-format=json 2>/dev/null |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))'
}
dev=$("$BIN" attach --store "$work/nstore" "${CARD[@]}" "${EXTRA[@]}" --timing none | cut -f1)
fio --name=fill --filename="$dev" --rw=write --bs=1m --direct=1 --size=1g --ioengine=libaio \
  --iodepth=8 --output-format=terse >/dev/null
none_r=$(fio4k "$dev" randread); none_w=$(fio4k "$dev" randwrite)
"$BIN" detach --all >/dev/null
rm -rf "$work/nstore"
fio --name=fill --filename="$work/plain" --rw=write --bs=1m --direct=1 --size=1g --output-format=terse >/dev/null
plain_r=$(fio4k "$work/plain" randread); plain_w=$(fio4k "$work/plain" randwrite)
rm -f "$work/plain"
none_line=$(python3 -c "r,w,pr,pw=$none_r,$none_w,$plain_r,$plain_w; print(f'timing none, 4 KiB random, 4 jobs x QD 32, store on disk: read {r/1e3:.1f} K IOPS (target >= 150 K), write {w/1e3:.1f} K IOPS (target >= 100 K); plain file on the same disk: read {pr/1e3:.1f} K, write {pw/1e3:.1f} K; ratios {r/pr:.2f} / {w/pw:.2f}')")
echo "$none_line"

dev=$("$BIN" attach --store "$work/store" "${CARD[@]}" "${EXTRA[@]}" --timing model | cut -f1)
transport=$(python3 -c 'import json,glob,sys; print(json.load(open(glob.glob(sys.argv[1]+"/*/state.json")[0])).get("fuse_transport","?"))' "$OPENVSL_RUN_DIR")
echo "FUSE transport: $transport"
# Preconditioned as the model is (`vsl run --precondition`: the whole card
# written once, 1 MiB sequential at QD 32), so that both start from the same
# GC state: on a card partly written the attached writes would meet more
# free space than the model's and run faster than it.
fio --name=precondition --filename="$dev" --rw=write --bs=1m --direct=1 --ioengine=libaio \
  --iodepth=32 --output-format=terse >/dev/null
mkfs.ext4 -q -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$dev"
mkdir -p "$work/fs"
mount "$dev" "$work/fs"
SB=(sysbench fileio --file-total-size="$SIZE" --file-block-size=16384)
# The files are written with O_DIRECT too (about a minute): written through
# the page cache, 8 GiB of client pages would compete with the store's for
# RAM (every cached client page is a second copy of a store page, which a
# real card has not), and dropping them afterwards left the host reclaiming
# (steal time) through the first point.
(cd "$work/fs" && "${SB[@]}" --file-extra-flags=direct prepare >/dev/null && sync)
# FSYNC_FREQ 0 (default): no fsyncs, the pattern `vsl run` models. sysbench's
# own default, 100, fsyncs every file (128 of them) after each 100 requests
# of a thread: 1.28 fsyncs per write, each an ext4 journal commit and store
# sync that the random-write model does not have.
SB+=(--file-extra-flags=direct --file-fsync-freq="${FSYNC_FREQ:-0}")

# A write point first runs WRITE_SETTLE seconds (default 30) of the same
# sysbench run unmeasured (sysbench's --report-checkpoints resets every
# counter and the latency histogram there; the figures are the last
# report's). Between two points the card idles for a few seconds (sysbench
# exits, the card is re-attached and mounted), and after 10 ms without I/O
# the groomer frees space up to its idle target (`vsl.idle_groom_fraction`,
# docs/MODEL.md); without the settle the first seconds of a point write
# into that space without collecting, while the model's point runs straight
# after its warm-up with no idle time (bench/RESULTS.md, 2026-11-27).
WRITE_SETTLE=${WRITE_SETTLE:-30}
# sysbench MODE THREADS SETTLE -> "MiB/s p95_ms" on stdout
runsb() {
  local checkpoint=()
  [ "$3" -gt 0 ] && checkpoint=(--report-checkpoints="$3")
  (cd "$work/fs" && "${SB[@]}" --file-test-mode="$1" --threads="$2" \
    --time="$((RUNTIME + $3))" "${checkpoint[@]}" --percentile=95 run) | python3 -c '
import re,sys
t=sys.stdin.read()
last=lambda pat: float(re.findall(pat, t)[-1])
r=last(r"read, MiB/s:\s+([0-9.]+)")
w=last(r"written, MiB/s:\s+([0-9.]+)")
p=last(r"95th percentile:\s+([0-9.]+)")
print(r+w, p)'
}
# Random writes are compared in steady state on both sides: the attached
# card first takes WRITE_WARMUP seconds (default 120) of sysbench rndwr at 16
# threads, unmeasured, and each model write point runs as long a warm-up in
# virtual time after its fill. (Without it the model's point starts from a
# fresh fill while the attached card carries every earlier point's writes.)
WRITE_WARMUP=${WRITE_WARMUP:-120}
# vsl run RW THREADS -> MiB/s
runmodel() {
  local warm=()
  [ "$1" = randwrite ] && warm=(--warmup "${WRITE_WARMUP}s")
  "$VSL" run "${CARD[@]}" --rw "$1" --bs 16k --threads "$2" --qd 1 --size "$SIZE" \
    --precondition "${warm[@]}" --duration 10s --json "$work/model.json" >/dev/null 2>&1
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]; print(s["iops"]*16384/2**20)
print("    vsl run: mean latency %.1f us" % s.get("lat_avg_us", 0), file=sys.stderr)' "$work/model.json"
}
status_json() { "$BIN" status --json; }
breakdown() {
  python3 -c '
import json,sys
m=json.loads(sys.argv[1])[0]["members"][0]
f=lambda k: m.get(k) or {}
print("    daemon: service p50 %.1f us p99 %.1f us | late p50 %.1f us p99 %.1f us | flushes %d, flush p50 %.2f ms p99 %.2f ms" % (
  f("service_latency").get("p50_us",0), f("service_latency").get("p99_us",0),
  f("emulator_late").get("p50_us",0), f("emulator_late").get("p99_us",0),
  m["flushes"], f("flush_latency").get("p50_us",0)/1e3, f("flush_latency").get("p99_us",0)/1e3))
p=m.get("prefault") or {}
print("    prefault: on %s, units prepared %d, used %d, taken back %d, claims waited %d; erases %d; trims %d; WA %.2f" % (
  p.get("on"), p.get("prepared",0), p.get("used",0), p.get("taken_back",0), p.get("waited",0), m["erases"],
  m.get("trims",0), m.get("write_amplification",0)))
print("    reads answered earlier by the trim against the loop device latency (--path-trim): %+.1f us" % m.get("lead_trim_read_us",0))
for op, sp in sorted((m.get("wall_split") or {}).items()):
    if sp.get("count"):
        print("    %s: daemon wall time %.1f us = before the model %.1f + model %.1f - lead %.1f + late %.1f [%d I/Os]" % (
            op, sp["wall_us"], sp["before_model_us"], sp["model_us"], sp["lead_us"], sp["late_us"], sp["count"]))
# With a snapshot taken when the settle ended: the measured window alone.
if len(sys.argv) > 2 and sys.argv[2]:
    m0=json.loads(sys.argv[2])[0]["members"][0]
    for op, sp in sorted((m.get("wall_split") or {}).items()):
        sp0=(m0.get("wall_split") or {}).get(op) or {}
        n=sp.get("count",0)-sp0.get("count",0)
        if n > 0:
            tot=lambda k: sp[k]*sp["count"]-sp0.get(k,0)*sp0.get("count",0)
            print("    %s, measured window only: daemon wall time %.1f us, model %.1f us [%d I/Os]" % (
                op, tot("wall_us")/n, tot("model_us")/n, n))
    host=(m["host_bytes_written"]-m0["host_bytes_written"])/m["sector_bytes"]
    if host > 0:
        print("    measured window only: WA %.2f" % (1+(m["gc_sectors_moved"]-m0["gc_sectors_moved"])/host))' "$1" "${2:-}"
}

results=()
for mode in ${MODES:-rndrd rndwr}; do
  rw=randread; [ $mode = rndwr ] && rw=randwrite
  if [ $mode = rndwr ] && [ "$WRITE_WARMUP" -gt 0 ]; then
    attach_mount
    (cd "$work/fs" && "${SB[@]}" --file-test-mode=rndwr --threads=16 --time="$WRITE_WARMUP" run >/dev/null)
  fi
  for t in $THREADS; do
    attach_mount
    # The daemon's counters when the settle ends, to tell the measured
    # window's model latency from the settle's.
    rm -f "$work/settled.json"
    settle=0
    [ $mode = rndwr ] && settle=$WRITE_SETTLE
    if [ "$settle" -gt 0 ]; then
      (sleep "$settle"; status_json >"$work/settled.json") &
    fi
    read -r mbs p95 <<<"$(runsb $mode "$t" "$settle")"
    wait || true
    st=$(status_json)
    st0=$(cat "$work/settled.json" 2>/dev/null || true)
    model=$(runmodel $rw "$t")
    ratio=$(python3 -c "print(round($mbs/$model, 2))")
    ok=$(python3 -c "print('ok' if abs($mbs/$model-1) <= 0.15 else 'MISSED')")
    line=$(printf "%-6s %2d threads: attached %7.1f MiB/s (p95 %6.2f ms)  model %7.1f MiB/s  ratio %4s  %s" \
      $mode "$t" "$mbs" "$p95" "$model" "$ratio" "$ok")
    echo "$line"
    breakdown "$st" "$st0"
    results+=("$line")
  done
done
umount "$work/fs"
"$BIN" detach --all >/dev/null
echo
echo "sysbench fileio 16 KiB O_DIRECT (fsync freq ${FSYNC_FREQ:-0}) on ext4 on the attached iodrive-160-slc (--scale 0.1, timing model, store on disk, FUSE transport $transport), write points measured after ${WRITE_SETTLE} s unmeasured in the same sysbench run, vs vsl run in virtual time, same run:"
printf '  %s\n' "${results[@]}"
echo "  the disk's sequential write speed with fdatasync, same run: $disk_mbs MB/s"
echo "$none_line"
