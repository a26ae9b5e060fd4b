#!/usr/bin/env bash
# The lab (`vsl run --target file:...`) vs fio on the same file, in the same
# run: 4 KiB randread and randwrite at 1x1, 4x16 and 16x16 (threads x QD), on
# a file in tmpfs (/dev/shm) and on a file on disk. Both use io_uring, the
# same direct flag, file, size, bs, iodepth, numjobs and runtime, uniform
# random offsets with replacement, and both run their workers as threads of
# one process (fio --thread).
#
# Each point is measured ROUNDS times, ours and fio back to back (the order
# alternating between rounds). Printed per point: the median IOPS of each
# tool, the median of the per-round ratios ours/fio (target: within 10 %,
# bench target >= 0.9) with its range, and each tool's CPU time per I/O
# (user + system of the whole process, io_uring workers included). Where
# both tools are CPU-bound (tmpfs at QD 16: an "I/O" is a 4 KiB memcpy),
# IOPS ratio ~= fio's CPU per I/O / ours, printed as "cpu fio/ours".
#
# usage: bench/fio_agreement.sh [SECONDS per run, default 5] [SIZE, default 1G]
#   ROUNDS=3          rounds per point
#   DISK_DIR=/var/tmp directory of the on-disk file
#   JSON_OUT=FILE     also write every round as JSON
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
size=${2:-1G}
rounds=${ROUNDS:-3}
disk_dir=${DISK_DIR:-/var/tmp}
command -v fio >/dev/null || { echo "fio not found: run scripts/setup.sh" >&2; exit 1; }
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build -q --release --bin vsl
vsl="$CARGO_TARGET_DIR/release/vsl"
work=$(mktemp -d)
trap 'rm -rf "$work"; rm -f /dev/shm/openvsl-fio-agree "$disk_dir/openvsl-fio-agree"' EXIT
raw="$work/rounds.txt"
: >"$raw"

ours() { # path rw threads qd -> "iops ios cpu_s cpu_us_per_io"
  python3 bench/cpu_run.py ours "$work/ours.json" -- "$vsl" run --target "file:$1:$size" \
    --rw "$2" --bs 4k --threads "$3" --qd "$4" --duration "${secs}s" --interval 1s \
    --json "$work/ours.json" -q
}
theirs() { # path rw threads qd direct
  python3 bench/cpu_run.py fio "$work/fio.json" -- fio --name=agree --filename="$1" \
    --size="$size" --bs=4k --rw="$2" --ioengine=io_uring --direct="$5" --iodepth="$4" \
    --numjobs="$3" --runtime="$secs" --time_based --group_reporting --norandommap \
    --randrepeat=0 --thread --output-format=json
}

echo "fio_agreement: $("$vsl" --version) vs $(fio --version), ${secs}s per run, ${rounds} rounds, ${size} file, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for place in tmpfs disk; do
  if [ "$place" = tmpfs ]; then path=/dev/shm/openvsl-fio-agree; else path="$disk_dir/openvsl-fio-agree"; fi
  # Fill once so reads hit written blocks (not unwritten extents).
  "$vsl" run --target "file:$path:$size" --rw randread --bs 4k --threads 1 --qd 1 \
    --duration 100ms --precondition -q --json "$work/fill.json"
  direct=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["device"]["direct"]))' "$work/fill.json")
  for rw in randread randwrite; do
    for tq in 1x1 4x16 16x16; do
      t=${tq%x*}; q=${tq#*x}
      for r in $(seq 1 "$rounds"); do
        if [ $((r % 2)) = 1 ]; then
          o=$(ours "$path" "$rw" "$t" "$q"); f=$(theirs "$path" "$rw" "$t" "$q" "$direct")
        else
          f=$(theirs "$path" "$rw" "$t" "$q" "$direct"); o=$(ours "$path" "$rw" "$t" "$q")
        fi
        echo "$place $rw $tq $direct $r $o $f" >>"$raw"
        echo "  $place $rw $tq round $r: ours $(echo "$o" | cut -d' ' -f1) fio $(echo "$f" | cut -d' ' -f1)" >&2
      done
    done
  done
done

python3 - "$raw" "${JSON_OUT:-}" <<'EOF'
import json, statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    p, rw, tq, d, r, oi, on, oc, ou, fi, fn, fc, fu = line.split()
    rows.setdefault((p, rw, tq, d), []).append(dict(
        round=int(r), ours_iops=float(oi), ours_ios=int(on), ours_cpu_s=float(oc),
        ours_cpu_us_per_io=float(ou), fio_iops=float(fi), fio_ios=int(fn),
        fio_cpu_s=float(fc), fio_cpu_us_per_io=float(fu)))
print(f"{'place':<6} {'rw':<10} {'TxQD':<6} {'ours':>9} {'fio':>9} {'ratio':>6} {'range':>11} "
      f"{'cpu/IO ours':>12} {'fio':>6} {'cpu fio/ours':>13}")
out = []
for (p, rw, tq, d), rs in rows.items():
    ratios = [x["ours_iops"] / x["fio_iops"] for x in rs]
    oc = st.median(x["ours_cpu_us_per_io"] for x in rs)
    fc = st.median(x["fio_cpu_us_per_io"] for x in rs)
    row = dict(place=p, rw=rw, threads_x_qd=tq, direct=d == "1",
               ours_iops=st.median(x["ours_iops"] for x in rs),
               fio_iops=st.median(x["fio_iops"] for x in rs),
               ratio=st.median(ratios), ratio_min=min(ratios), ratio_max=max(ratios),
               ours_cpu_us_per_io=oc, fio_cpu_us_per_io=fc, rounds=rs)
    out.append(row)
    print(f"{p:<6} {rw:<10} {tq:<6} {row['ours_iops']:>9.0f} {row['fio_iops']:>9.0f} "
          f"{row['ratio']:>6.2f} {min(ratios):>5.2f}-{max(ratios):<5.2f} {oc:>10.2f}us {fc:>4.2f}us {fc / oc:>13.2f}")
if sys.argv[2]:
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
EOF
