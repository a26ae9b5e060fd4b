#!/usr/bin/env bash
# The lab (`vsl run --target ...`) vs fio on the same target, in the same
# run (issue 33): random read and random write, 4 KiB and 64 KiB, at 1x1,
# 4x16 and 16x16 (threads x QD), on a laid-out file on disk and on a loop
# device over that file (losetup --direct-io=on, so the loop device's I/O
# reaches the disk, not the page cache). fio runs twice per point: io_uring
# and libaio, and io_uring once more as a control: fio against itself shows
# how far two runs of one tool drift apart on this machine. Same target, size, bs, iodepth, numjobs, runtime, O_DIRECT,
# uniform random offsets with replacement (--norandommap), workers as
# threads of one process (fio --thread).
#
# Each point is measured ROUNDS times, the three tools back to back with the
# order rotating between rounds. Printed per point: each tool's median IOPS,
# the medians of the per-round ratios ours/fio of IOPS and of mean latency
# (fio's `lat`: submission to completion), for io_uring and libaio, and
# whether our run was measured on the device (disk counters; `vsl run`'s
# measured_on_device). Target: every ratio within 0.9-1.1.
#
# usage: bench/fio_agreement.sh [SECONDS per run, default 2] [SIZE, default 1G]
#   ROUNDS=5          rounds per point
#   DISK_DIR=/var/tmp directory of the file
#   PLACES="file loop" RWS="randread randwrite" BSS="4k 64k" TQS="1x1 4x16 16x16"
#   JSON_OUT=FILE     also write every round as JSON
#   VSL=PATH          use this vsl binary (default: build it)
#   MEM=pages|huge    what both tools' I/O buffers are made of: pages = 4 KiB
#                     pages (ours --mem pages, fio --mem=malloc, both tools'
#                     default); huge = 2 MiB pages (ours --mem huge, fio
#                     --mem=shmhuge), with hugetlbfs pages reserved for the
#                     run (vm.nr_hugepages, restored after). On a virtio disk
#                     a 64 KiB buffer of scattered 4 KiB pages is 16
#                     segments, in a huge page one: the host serves the two
#                     at different speeds, and which pages a process gets is
#                     luck (docs/REALDEV.md).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-2}
size=${2:-1G}
rounds=${ROUNDS:-5}
disk_dir=${DISK_DIR:-/var/tmp}
mem=${MEM:-pages}
case $mem in
  pages) fio_mem=malloc ;;
  huge) fio_mem=shmhuge ;;
  *) echo "MEM=$mem: expected pages or huge" >&2; exit 1 ;;
esac
command -v fio >/dev/null || { echo "fio not found: run scripts/setup.sh" >&2; exit 1; }
if [ -n "${VSL:-}" ]; then
  vsl=$VSL
else
  export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
  cargo build -q --release --bin vsl
  vsl="$CARGO_TARGET_DIR/release/vsl"
fi
work=$(mktemp -d)
file="$disk_dir/openvsl-fio-agree"
loop=""
cleanup() {
  if [ -n "$loop" ]; then losetup -d "$loop" || true; fi
  rm -rf "$work"; rm -f "$file"
  if [ -n "${old_huge:-}" ]; then echo "$old_huge" >/proc/sys/vm/nr_hugepages; fi
}
trap cleanup EXIT
raw="$work/rounds.txt"
: >"$raw"

ours() { # target rw bs threads qd
  python3 bench/cpu_run.py ours "$work/ours.json" -- "$vsl" run --target "$1" \
    --rw "$2" --bs "$3" --threads "$4" --qd "$5" --duration "${secs}s" --interval 1s \
    --mem "$mem" --json "$work/ours.json" -q
}
theirs() { # engine path rw bs threads qd
  python3 bench/cpu_run.py fio "$work/fio.json" -- fio --name=agree --filename="$2" \
    --size="$size" --bs="$4" --rw="$3" --ioengine="$1" --direct=1 --iodepth="$6" \
    --numjobs="$5" --runtime="$secs" --time_based --group_reporting --norandommap \
    --randrepeat=0 --thread --mem="$fio_mem" --output-format=json
}

echo "fio_agreement: $("$vsl" --version) vs $(fio --version), I/O memory $mem, ${secs}s per run, ${rounds} rounds, ${size} file in $disk_dir ($(findmnt -no FSTYPE --target "$disk_dir")), $(nproc) cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$mem" = huge ]; then
  # Enough 2 MiB pages for 16 jobs x QD 16 x 64 KiB, each job's area
  # rounded up to whole pages, for fio's shm and for ours.
  old_huge=$(cat /proc/sys/vm/nr_hugepages)
  echo 256 >/proc/sys/vm/nr_hugepages
  echo "huge pages: $(cat /proc/sys/vm/nr_hugepages) x 2 MiB reserved (was $old_huge)"
fi
# Lay the file out once (sequential 1 MiB writes of random data).
"$vsl" run --target "file:$file:$size" --rw write --bs 1M --threads 1 --qd 1 \
  --duration 100ms --precondition -q --json "$work/fill.json"
loop=$(losetup --direct-io=on --show -f "$file")
echo "loop device: $loop over $file, direct-io $(cat /sys/block/"${loop#/dev/}"/loop/dio)"
for place in ${PLACES:-file loop}; do
  if [ "$place" = file ]; then path=$file; tgt="file:$file:$size"; else path=$loop; tgt="blockdev:$loop"; fi
  for rw in ${RWS:-randread randwrite}; do
    for bs in ${BSS:-4k 64k}; do
      for tq in ${TQS:-1x1 4x16 16x16}; do
        t=${tq%x*}; q=${tq#*x}
        for r in $(seq 1 "$rounds"); do
          o=""; u=""; l=""; c=""
          for k in 0 1 2 3; do
            case $(( (k + r) % 4 )) in
              0) o=$(ours "$tgt" "$rw" "$bs" "$t" "$q") ;;
              1) u=$(theirs io_uring "$path" "$rw" "$bs" "$t" "$q") ;;
              2) l=$(theirs libaio "$path" "$rw" "$bs" "$t" "$q") ;;
              3) c=$(theirs io_uring "$path" "$rw" "$bs" "$t" "$q") ;;
            esac
          done
          echo "$place $rw $bs $tq $r $o $u $l $c" >>"$raw"
          echo "  $place $rw $bs $tq round $r: ours $(echo "$o" | cut -d' ' -f1) io_uring $(echo "$u" | cut -d' ' -f1) libaio $(echo "$l" | cut -d' ' -f1) io_uring again $(echo "$c" | cut -d' ' -f1)" >&2
        done
      done
    done
  done
done

python3 - "$raw" "${JSON_OUT:-}" <<'PY'
import json, statistics as st, sys
rows = {}
for line in open(sys.argv[1]):
    w = line.split()
    key, r = tuple(w[:4]), int(w[4])
    tool = lambda i: dict(iops=float(w[i]), ios=int(w[i + 1]), cpu_s=float(w[i + 2]),
                          cpu_us_per_io=float(w[i + 3]), lat_us=float(w[i + 4]), measured=w[i + 5])
    rows.setdefault(key, []).append(dict(round=r, ours=tool(5), io_uring=tool(11), libaio=tool(17),
                                         control=tool(23)))
print(f"{'place':<5} {'rw':<9} {'bs':>3} {'TxQD':<5} {'ours':>8} {'uring':>8} {'libaio':>8}"
      f" {'iops/uring':>10} {'iops/aio':>8} {'lat/uring':>9} {'lat/aio':>7} {'lat us':>8} dev"
      f" {'fio/fio iops':>12} {'lat':>5}")
out, worst = [], (1.0, None)
for key, rs in rows.items():
    med = lambda f: st.median(f(x) for x in rs)
    ratio = lambda a, b, o="ours": med(lambda x: x[o][a] / x[b][a])
    row = dict(place=key[0], rw=key[1], bs=key[2], threads_x_qd=key[3],
               ours_iops=med(lambda x: x["ours"]["iops"]),
               io_uring_iops=med(lambda x: x["io_uring"]["iops"]),
               libaio_iops=med(lambda x: x["libaio"]["iops"]),
               iops_ratio_io_uring=ratio("iops", "io_uring"), iops_ratio_libaio=ratio("iops", "libaio"),
               lat_ratio_io_uring=ratio("lat_us", "io_uring"), lat_ratio_libaio=ratio("lat_us", "libaio"),
               ours_lat_us=med(lambda x: x["ours"]["lat_us"]),
               control_iops_ratio=ratio("iops", "io_uring", "control"),
               control_lat_ratio=ratio("lat_us", "io_uring", "control"),
               measured_on_device=all(x["ours"]["measured"] == "1" for x in rs), rounds=rs)
    out.append(row)
    for k in ("iops_ratio_io_uring", "iops_ratio_libaio", "lat_ratio_io_uring", "lat_ratio_libaio"):
        if abs(row[k] - 1) > abs(worst[0] - 1):
            worst = (row[k], f"{' '.join(key)} {k}")
    print(f"{key[0]:<5} {key[1]:<9} {key[2]:>3} {key[3]:<5} {row['ours_iops']:>8.0f} {row['io_uring_iops']:>8.0f}"
          f" {row['libaio_iops']:>8.0f} {row['iops_ratio_io_uring']:>10.2f} {row['iops_ratio_libaio']:>8.2f}"
          f" {row['lat_ratio_io_uring']:>9.2f} {row['lat_ratio_libaio']:>7.2f} {row['ours_lat_us']:>8.1f}"
          f" {'yes' if row['measured_on_device'] else 'NO':<3} {row['control_iops_ratio']:>12.2f}"
          f" {row['control_lat_ratio']:>5.2f}")
inside = sum(all(0.9 <= r[k] <= 1.1 for k in ("iops_ratio_io_uring", "iops_ratio_libaio",
             "lat_ratio_io_uring", "lat_ratio_libaio")) for r in out)
print(f"{inside} of {len(out)} points have all four ratios within 0.9-1.1; furthest: {worst[0]:.2f} ({worst[1]})")
ctrl = sum(0.9 <= r["control_iops_ratio"] <= 1.1 and 0.9 <= r["control_lat_ratio"] <= 1.1 for r in out)
print(f"control: fio io_uring against itself within 0.9-1.1 at {ctrl} of {len(out)} points")
if sys.argv[2]:
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)
PY
