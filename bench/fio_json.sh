#!/usr/bin/env bash
# fio's JSON from vsl vs fio's own (issue 30): one job file, run by fio 3.33
# on a real file and by `vsl run JOB.fio --target file:PATH:SIZE`, both with
# --output-format=json+. Prints the key paths fio writes that vsl does not
# (missing) and the reverse (extra), recursively (maps whose keys are data —
# percentile, bins, job/global options — are compared as present, not key
# by key), then the values: IOPS, bandwidth and mean latency (fio's lat_ns:
# submission to completion, vsl's issue to completion) per direction, the
# ratio vsl/fio as the median over ROUNDS rounds (the two tools alternate,
# the order swapping each round). Target: no missing key; ratios 0.9-1.1.
# Finally fio's own fio_jsonplus_clat2csv reads and validates vsl's json+.
#
# usage: bench/fio_json.sh [SECONDS per run, default 3] [SIZE, default 256M]
#   ROUNDS=3  RW=randrw  BS=4k  IODEPTH=8  ENGINE=io_uring
#   DISK_DIR=/var/tmp (O_DIRECT needs a disk-backed filesystem)
#   VSL=PATH  use this vsl binary (default: build it)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-3}
size=${2:-256M}
rounds=${ROUNDS:-3}
command -v fio >/dev/null || { echo "fio not found: run scripts/setup.sh" >&2; exit 1; }
if [ -n "${VSL:-}" ]; then
  vsl=$VSL
else
  cargo build -q --release --bin vsl
  vsl=target/release/vsl
fi
work=$(mktemp -d "${DISK_DIR:-/var/tmp}/openvsl-fio-json.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/job.fio" <<EOF
[global]
ioengine=${ENGINE:-io_uring}
direct=1
time_based
runtime=$secs
filename=$work/data
size=$size
norandommap

[cmp]
rw=${RW:-randrw}
bs=${BS:-4k}
iodepth=${IODEPTH:-8}
EOF
echo "fio_json: $(fio --version), $secs s per run, $rounds rounds, job:" >&2
sed 's/^/    /' "$work/job.fio" >&2
echo "load: $(uptime)" >&2
for r in $(seq 1 "$rounds"); do
  run_fio() { fio "$work/job.fio" --output-format=json+ --output="$work/fio.$r.json" >/dev/null; }
  run_vsl() { "$vsl" run "$work/job.fio" --target "file:$work/data:$size" -q \
    --output-format json+ >"$work/vsl.$r.json"; }
  if [ $((r % 2)) = 1 ]; then run_fio; run_vsl; else run_vsl; run_fio; fi
done
python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
DATA_KEYS = {"bins", "percentile", "job options", "global options"}
def paths(v, at=""):
    out = set()
    if isinstance(v, dict):
        for k, x in v.items():
            out.add(f"{at}/{k}")
            if k not in DATA_KEYS:
                out |= paths(x, f"{at}/{k}")
    elif isinstance(v, list):
        for x in v:
            out |= paths(x, f"{at}[]")
    return out
fio = [json.load(open(f"{work}/fio.{r}.json")) for r in range(1, rounds + 1)]
ours = [json.load(open(f"{work}/vsl.{r}.json")) for r in range(1, rounds + 1)]
a, b = paths(fio[0]), paths(ours[0])
missing, extra = sorted(a - b), sorted(b - a)
print(f"keys: fio {len(a)}, vsl {len(b)}; missing {len(missing)}: {missing}; extra {len(extra)}: {extra}")
ok = not missing
for d in ("read", "write"):
    if fio[0]["jobs"][0][d]["total_ios"] == 0:
        continue
    for name, get in (("iops", lambda j: j["iops"]), ("bw KiB/s", lambda j: j["bw"]),
                      ("mean lat us", lambda j: j["lat_ns"]["mean"] / 1e3),
                      ("p99 clat us", lambda j: j["clat_ns"]["percentile"]["99.000000"] / 1e3)):
        f = [get(x["jobs"][0][d]) for x in fio]
        o = [get(x["jobs"][0][d]) for x in ours]
        ratios = [oo / ff for oo, ff in zip(o, f) if ff]
        ratio = statistics.median(ratios)
        within = 0.9 <= ratio <= 1.1
        if name != "p99 clat us":
            ok &= within
        print(f"{d:5} {name:12} fio {statistics.median(f):12.1f}  vsl {statistics.median(o):12.1f}"
              f"  vsl/fio {ratio:.3f} (rounds {min(ratios):.2f}-{max(ratios):.2f}) {'ok' if within else 'OUTSIDE 10 %'}"
              f"{' (informative)' if name == 'p99 clat us' else ''}")
print("verdict:", "keys complete, values within 10 %" if ok else "NOT within target")
EOF
fio_jsonplus_clat2csv "$work/vsl.1.json" "$work/clat" | sed 's/^/fio_jsonplus_clat2csv: /'
fio_jsonplus_clat2csv --validate "$work/vsl.1.json" "$work/clat" | sed 's/^/fio_jsonplus_clat2csv: /'
echo "load after: $(uptime)" >&2
