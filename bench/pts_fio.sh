#!/usr/bin/env bash
# The PTS IOPS test run by fio on the same real file as `vsl pts`, and
# compared point by point with the lab's measurement window (issue 31:
# within 10 %).
#
#   bench/pts_fio.sh PTS_OUT_DIR FILE [POINTS]
#
# PTS_OUT_DIR: the --out of a `vsl pts --test iops` (or all) run on
# file:FILE:SIZE. fio repeats that run's protocol (MODE=rounds, the
# default): purge (punch-hole), WIPC (wipc_multiple x the file of SEQ
# 128 KiB writes, 1 job x QD 32), then as many rounds as the lab ran of
# every point of the matrix in the PTS order (R/W mix outer, block size
# inner), each point round-time long, one after the other (stonewall), at
# the run's threads x queue depth (numjobs x iodepth). The comparison is the
# mean IOPS of each point over the last five rounds, as the lab's window.
#
# MODE=ss runs instead each of POINTS ("read%:bs ...", default
# "100:4k 0:4k 65:8k 100:128k") alone to fio's own steady state
# (ss=iops:20%, 25 round-times at most): not the PTS protocol (a point of
# the IOPS test follows the other points of its round), kept for
# comparison.
#
# AFTER=PTS_OUT_DIR2: a second lab run of the same command made right after
# fio's (lab, fio, lab again). Each point's lab figure is then the mean of
# the two lab windows, which brackets fio's run in time: a disk whose speed
# drifts over the minutes of the three runs (this machine's virtio disk
# does, docs/REALDEV.md) then moves both sides alike. Both lab figures are
# in agreement.csv, so the lab's own spread shows.
#
# MODE=interleaved runs the same protocol (purge, WIPC, the rounds of every
# point in the PTS order) with the lab (`vsl run`, VSL=path, default
# target/release/vsl) and fio taking turns on each point, seconds apart,
# the first alternating (bench/lib/pts_interleaved.py); ROUNDS= overrides
# the lab run's round count, SS=1 runs each point once to fio's own steady
# state (a job file per point with ss=, the lab just before and just after
# it; BRACKET=0 for one lab run, before or after, alternating; PASSES=N goes
# over the matrix N times and averages, SS_DUR=N widens the window to N
# round times), MEM=huge gives both tools 2 MiB-page buffers
# (hugetlbfs pages reserved for the run, restored after). Writes
# PTS_OUT_DIR/fio/interleaved.csv with the `vsl pts` run's own window next
# to it.
#
# COMPARE_ONLY=1: compare again from the fio JSON already in PTS_OUT_DIR/fio
# (no purge, no fio run).
#
# Writes PTS_OUT_DIR/fio/*.fio, *.json and agreement.csv; prints the table
# and a summary line.
set -euo pipefail
out=${1:?PTS output dir}
file=${2:?target file}
mode=${MODE:-rounds}
points=${3:-"100:4k 0:4k 65:8k 100:128k"}
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
[ -f "$out/results.json" ] || { echo "$out/results.json: no such file" >&2; exit 1; }
[ -f "$file" ] || { echo "$file: no such file" >&2; exit 1; }
after=${AFTER:-}
if [ -n "$after" ] && [ ! -f "$after/results.json" ]; then
  echo "AFTER=$after: no results.json there" >&2; exit 1
fi
mkdir -p "$out/fio"
size=$(stat -c %s "$file")

if [ "$mode" = interleaved ]; then
  vsl=${VSL:-target/release/vsl}
  [ -x "$vsl" ] || { echo "VSL=$vsl: not an executable (cargo build --release -p vsl)" >&2; exit 1; }
  mem=${MEM:-pages}
  if [ "$mem" = huge ]; then
    old_huge=$(cat /proc/sys/vm/nr_hugepages)
    trap 'echo "$old_huge" >/proc/sys/vm/nr_hugepages' EXIT
    echo 512 >/proc/sys/vm/nr_hugepages
  fi
  python3 "$(dirname "$0")/lib/pts_interleaved.py" "$out" "$file" "$vsl" "$mem"
  column -s, -t < "$out/fio/interleaved${SS:+-ss}.csv"
  exit 0
fi

if [ "$mode" = rounds ]; then
  # The job file of the lab's run: purge and WIPC first, then the rounds.
  python3 - "$out" "$file" "$size" "$(dirname "$0")/lib" > "$out/fio/pts-iops.fio" <<'PY'
import json, sys
out, path, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, sys.argv[4])
from pts_interleaved import fio_global
d = json.load(open(f"{out}/results.json"))
p = d.get("plan") or sys.exit(f"{out}/results.json: not the results of a vsl pts run (no plan)")
r = next((r for r in d["results"] if r["test"] == "iops" and not r.get("error")), None)
if r is None:
    sys.exit(f"{out}/results.json: no IOPS test result")
rounds = r["steady"][0]["rounds_run"]
order = []
for q in r["rounds"][0]["points"]:
    order.append((q["read_pct"], q["bs"]))
secs = p["round_ns"] / 1e9
print(fio_global(path, size) + f"""[wipc]
rw=write
bs=128k
iodepth=32
numjobs=1
loops={max(1, round(p["wipc_multiple"]))}
""")
for n in range(1, rounds + 1):
    for rd, bs in order:
        print(f"""[r{n}_{rd:g}_{bs}]
stonewall
rw=randrw
rwmixread={rd:g}
bs={bs}
numjobs={p["threads"]}
iodepth={p["qd"]}
time_based=1
runtime={int(p["round_ns"] / 1e6)}ms
""")
PY
  if [ -n "${COMPARE_ONLY:-}" ]; then
    [ -f "$out/fio/pts-iops.json" ] || { echo "COMPARE_ONLY: $out/fio/pts-iops.json: no fio run to compare" >&2; exit 1; }
  else
    echo "fio: purge (punch-hole) of $file" >&2
    fallocate --punch-hole --offset 0 --length "$size" "$file"
    sync "$file"
    echo "fio: WIPC and $(grep -c '^\[r' "$out/fio/pts-iops.fio") point runs ($out/fio/pts-iops.fio)" >&2
    fio --output-format=json --output="$out/fio/pts-iops.json" "$out/fio/pts-iops.fio" >/dev/null
  fi
  python3 - "$out" "$after" > "$out/fio/agreement.csv" <<'PY'
import json, sys
out, after = sys.argv[1], sys.argv[2]
def iops_result(o):
    d = json.load(open(f"{o}/results.json"))
    r = next((r for r in d["results"] if r["test"] == "iops" and not r.get("error")), None)
    if r is None:
        sys.exit(f"{o}/results.json: no IOPS test result")
    return r
r = iops_result(out)
lab2 = {}
if after:
    lab2 = {(q["read_pct"], q["bs"]): q["stats"]["iops"] for q in iops_result(after)["window"]}
rounds = r["steady"][0]["rounds_run"]
first = max(1, rounds - 4)
fio = {}
for j in json.load(open(f"{out}/fio/pts-iops.json"))["jobs"]:
    name = j["jobname"]
    if not name.startswith("r"):
        continue
    n, rd, bs = name[1:].split("_")
    if int(n) >= first:
        fio.setdefault((float(rd), int(bs)), []).append(j["read"]["iops"] + j["write"]["iops"])
print("point,lab_iops,fio_iops,fio_over_lab,lab_before,lab_after")
for q in r["window"]:
    key = (q["read_pct"], q["bs"])
    f = fio.get(key)
    if not f:
        continue
    before = q["stats"]["iops"]
    if after and key not in lab2:
        sys.exit(f"{after}: no point {q['label']} (not the same command?)")
    later = lab2.get(key, before)
    lab = (before + later) / 2
    f = sum(f) / len(f)
    later_s = f"{later:.0f}" if after else ""
    print(f"{q['label'].replace(' ', '_')},{lab:.0f},{f:.0f},{f / lab:.3f},{before:.0f},{later_s}")
PY
  column -s, -t < "$out/fio/agreement.csv"
  python3 - "$out/fio/agreement.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
inside = [r for r in rows if 0.9 <= float(r["fio_over_lab"]) <= 1.1]
far = max(rows, key=lambda r: abs(float(r["fio_over_lab"]) - 1))
print(f"{len(inside)} of {len(rows)} points within 10 % (fio/lab 0.9-1.1); furthest {far['point']} {far['fio_over_lab']}")
PY
  exit 0
fi

[ "$mode" = ss ] || { echo "MODE=$mode: rounds, interleaved or ss" >&2; exit 1; }
read -r threads qd round_s < <(python3 -c '
import json,sys; p=json.load(open(sys.argv[1]))["plan"]
print(p["threads"], p["qd"], max(1, round(p["round_ns"]/1e9)))' "$out/results.json")
echo "test,point,lab_iops,fio_iops,fio_steady,diff_pct" > "$out/fio/agreement-ss.csv"
for pt in $points; do
  rd=${pt%%:*}; bs=${pt##*:}
  name="r${rd}-${bs}"
  cat > "$out/fio/$name.fio" <<JOB
[global]
filename=$file
size=$size
direct=1
ioengine=io_uring
thread=1
rw=randrw
rwmixread=$rd
bs=$bs
numjobs=$threads
iodepth=$qd
group_reporting=1
norandommap=1
randrepeat=0
time_based=1
runtime=$((round_s * 25))
ss=iops:20%
ss_dur=$((round_s * 5))
[$name]
JOB
  fio --output-format=json --output="$out/fio/$name.json" "$out/fio/$name.fio" >/dev/null
  python3 - "$out" "$name" "$rd" "$bs" >> "$out/fio/agreement-ss.csv" <<'PY'
import json, sys
out, name, rd, bs = sys.argv[1:]
units = {"k": 1024, "m": 1 << 20}
b = int(bs[:-1]) * units[bs[-1].lower()] if bs[-1].isalpha() else int(bs)
j = json.load(open(f"{out}/fio/{name}.json"))["jobs"][0]
fio = j["read"]["iops"] + j["write"]["iops"]
steady = j.get("steadystate", {}).get("attained", "n/a")
lab = None
for r in json.load(open(f"{out}/results.json"))["results"]:
    if r["test"] != "iops":
        continue
    for p in r["window"]:
        if p["bs"] == b and abs(p["read_pct"] - float(rd)) < 1e-9:
            lab = p["stats"]["iops"]
label = f"{rd}/{100-int(rd)} {bs}"
if lab is None:
    print(f"iops,{label},,{fio:.0f},{steady},not in the lab run")
else:
    print(f"iops,{label},{lab:.0f},{fio:.0f},{steady},{(fio/lab-1)*100:+.1f}")
PY
done
column -s, -t < "$out/fio/agreement-ss.csv"
