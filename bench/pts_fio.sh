#!/usr/bin/env bash
# The PTS IOPS points run by fio on the same real file as `vsl pts`, with
# fio's own steady-state detection (ss=iops:20%, ss_dur), and compared with
# the lab's measurement-window IOPS (issue 31: within 10 %).
#
#   bench/pts_fio.sh PTS_OUT_DIR FILE [POINTS]
#
# PTS_OUT_DIR: the --out of a `vsl pts --test iops` (or all) run on
# file:FILE:SIZE; POINTS: "read%:bs ..." (default "100:4k 0:4k 65:8k 100:128k").
# Threads and queue depth are the run's (results.json plan). Writes
# PTS_OUT_DIR/fio/*.fio, *.json and agreement.csv; prints the table.
set -euo pipefail
out=${1:?PTS output dir}
file=${2:?target file}
points=${3:-"100:4k 0:4k 65:8k 100:128k"}
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
[ -f "$out/results.json" ] || { echo "$out/results.json: no such file" >&2; exit 1; }
[ -f "$file" ] || { echo "$file: no such file" >&2; exit 1; }
mkdir -p "$out/fio"
read -r threads qd round_s < <(python3 -c '
import json,sys; p=json.load(open(sys.argv[1]))["plan"]
print(p["threads"], p["qd"], max(1, round(p["round_ns"]/1e9)))' "$out/results.json")
size=$(stat -c %s "$file")
echo "test,point,lab_iops,fio_iops,fio_steady,diff_pct" > "$out/fio/agreement.csv"
for pt in $points; do
  rd=${pt%%:*}; bs=${pt##*:}
  name="r${rd}-${bs}"
  cat > "$out/fio/$name.fio" <<JOB
[global]
filename=$file
size=$size
direct=1
ioengine=libaio
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
  python3 - "$out" "$name" "$rd" "$bs" >> "$out/fio/agreement.csv" <<'PY'
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
column -s, -t < "$out/fio/agreement.csv"
