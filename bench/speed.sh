#!/usr/bin/env bash
# Simulation speed: simulated I/Os per wall-clock second on one full-size
# 320 GB ioDimm (iodrive-duo-640-mlc --member 0, 4 KiB sectors), 4 KiB random
# writes at 16T/16Q in steady state with GC running, next to the IOPS of
# `fio --ioengine=null` (fio doing nothing) measured in the same run; and the
# model's peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
# VSL=PATH measures another build (e.g. a copy of main's binary for a
# before/after ratio) instead of building this tree's.
if [ -z "${VSL:-}" ]; then
  cargo build --release -q -p vsl
  VSL=target/release/vsl
fi
WARMUP=${WARMUP:-3000s}
WINDOW=${WINDOW:-300s}

log=$(mktemp)
/usr/bin/time -v "$VSL" run --device iodrive-duo-640-mlc --member 0 --precondition \
  --profile 4k-randwrite --threads 16 --qd 16 --warmup "$WARMUP" --duration "$WINDOW" \
  --interval 60s --seed 1 >"$log" 2>&1
sim=$(grep -oP '\(\K[0-9.]+(?= M I/Os per wall second)' "$log")
wa=$(grep -oP 'write amplification\s+\K[0-9.]+' "$log")
rss_kb=$(grep -oP 'Maximum resident set size \(kbytes\): \K[0-9]+' "$log")
fio_iops=$(fio --name=null --ioengine=null --rw=randwrite --bs=4k --iodepth=16 --size=100g \
  --time_based --runtime=5 --output-format=json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["write"]["iops"])')
rm -f "$log"
python3 - "$sim" "$fio_iops" "$rss_kb" "$wa" <<'PY'
import sys
sim = float(sys.argv[1]) * 1e6
fio = float(sys.argv[2])
rss = int(sys.argv[3]) * 1024
wa = float(sys.argv[4])
print(f"simulated I/Os per wall second (steady state, WA {wa:.2f}): {sim/1e6:.2f} M  (target >= 2.00 M)")
print(f"fio --ioengine=null randwrite 4k iodepth 16, same run:      {fio/1e6:.2f} M IOPS")
print(f"ratio model / fio-null:                                     {sim/fio:.2f}  (target >= 1.0)")
print(f"peak RSS, one full 320 GB ioDimm, 4 KiB sectors:            {rss/1e9:.2f} GB  (target <= 1.5 GB)")
PY
