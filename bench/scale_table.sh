#!/usr/bin/env bash
# Scale invariance (issue 9): the same member (iodrive-duo-640-mlc --member 0,
# or PRESET), stock and hp formats, at --scale 1, 0.25, 0.05 and 0.02:
# 4 KiB random writes at 16T/16Q after a fill and a warm-up of about 20
# rotations of the log (virtual time proportional to the scale: the full
# card's figures swing with the rotation for many rotations after the
# fill, scaled cards settle sooner), then a WINDOW of virtual time
# measured; WARM_STOCK / WARM_HP (full-card seconds) change the warm-up.
# Prints steady-state IOPS, WA and the latency statistics, and each scaled figure's ratio to the full card's
# (measured in the same run). Usage: bench/scale_table.sh [PRESET] [SCALES]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p vsl
VSL=target/release/vsl
PRESET=${1:-iodrive-duo-640-mlc}
SCALES=${2:-"1 0.25 0.05 0.02"}
WINDOW=${WINDOW:-300s}
out=$(mktemp -d)
for fmt in stock hp; do
  # Warm-up: ~20 rotations of the log at the format's steady-state rate.
  case $fmt in stock) warm=${WARM_STOCK:-15000} ;; hp) warm=${WARM_HP:-12000} ;; esac
  for s in $SCALES; do
    w=$(python3 -c "print(max(60, round($warm * $s)))")
    "$VSL" run --device "$PRESET" --member 0 --format "$fmt" --scale "$s" --precondition \
      --profile 4k-randwrite --threads 16 --qd 16 --warmup "${w}s" --duration "$WINDOW" \
      --interval 30s --seed 1 --json "$out/$fmt-$s.json" >/dev/null 2>&1
  done
done
python3 - "$out" "$PRESET" $SCALES <<'PY'
import json, sys
out, preset, scales = sys.argv[1], sys.argv[2], sys.argv[3:]
keys = [("iops", "IOPS"), ("write_amplification", "WA"), ("lat_avg_us", "avg us"),
        ("lat_stddev_us", "stddev us"), ("lat_p99_us", "p99 us"), ("lat_max_us", "max us")]
print(f"scale invariance: {preset} member 0, 4K random write 16T/16Q, steady-state window")
for fmt in ["stock", "hp"]:
    rows = {s: json.load(open(f"{out}/{fmt}-{s}.json"))["summary"] for s in scales}
    base = rows[scales[0]]
    print(f"\n{fmt}: " + "  ".join(f"{h:>16}" for _, h in keys))
    for s in scales:
        r = rows[s]
        cells = []
        for k, _ in keys:
            v = r[k]
            ratio = v / base[k] if base[k] else float("nan")
            cells.append(f"{v:>9.1f} ({ratio:4.2f})" if k != "write_amplification" else f"{v:>9.3f} ({ratio:4.2f})")
        print(f"{s:>5}: " + "  ".join(f"{c:>16}" for c in cells))
PY
rm -rf "$out"
