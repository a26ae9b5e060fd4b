#!/usr/bin/env bash
# Flashback under a running workload (issue 11): one ioDimm
# (iodrive-duo-640-mlc --member 0, --scale 0.02), filled, then 4 KiB random
# reads at 4 workers x QD 4 for 90 s of virtual time. Die 29 (bank 1,
# channel 4) fails at 10 s. Printed: read latency (average, p99) before the
# failure, while degraded and rebuilding (adaptive), after the rebuild, and
# degraded without rebuild (--flashback basic), each with its ratio to the
# same run's pre-failure window and to a run without failure (the baseline,
# measured in this script); the rebuild time; lost sectors.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p vsl
VSL=target/release/vsl
FAIL_AT=${FAIL_AT:-10}
DURATION=${DURATION:-90s}
SCALE=${SCALE:-0.02}
dir=$(mktemp -d)
common=(run --device iodrive-duo-640-mlc --member 0 --scale "$SCALE" --precondition
  --profile 4k-randread --threads 4 --qd 4 --duration "$DURATION" --interval 1s --seed 1 -q)
"$VSL" "${common[@]}" --json "$dir/base.json"
"$VSL" "${common[@]}" --fail-die "29@${FAIL_AT}s" --json "$dir/adaptive.json"
"$VSL" "${common[@]}" --fail-die "29@${FAIL_AT}s" --flashback basic --json "$dir/basic.json"
python3 - "$dir" "$FAIL_AT" "$SCALE" <<'PY'
import json, sys
d, fail_at, scale = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
load = lambda n: json.load(open(f"{d}/{n}.json"))
base, ad, basic = load("base"), load("adaptive"), load("basic")
def window(run, lo, hi):
    iv = [i for i in run["intervals"] if lo < i["t_s"] <= hi]
    ios = sum(i["ios"] for i in iv)
    avg = sum(i["lat_avg_us"] * i["ios"] for i in iv) / max(ios, 1)
    p99 = sum(i["lat_p99_us"] for i in iv) / max(len(iv), 1)
    return avg, p99, ios
m = ad["media"][0]
rebuild = m["rebuild_s"]
end = ad["intervals"][-1]["t_s"]
finished = m["dies_rebuilt"] == 1
t_done = fail_at + rebuild if finished else end
rows = [
    ("no failure (baseline run)", window(base, 1, end)),
    ("before failure", window(ad, 1, fail_at)),
    ("degraded + rebuilding", window(ad, fail_at + 1, int(t_done))),
    ("after rebuild", window(ad, int(t_done) + 2, end) if finished else (float("nan"),) * 3),
    ("degraded, no rebuild (basic)", window(basic, fail_at + 1, end)),
]
b_avg, b_p99, _ = rows[0][1]
pre_avg, pre_p99, _ = rows[1][1]
print(f"{'window':<30}{'avg us':>9}{'p99 us':>9}{'avg/pre':>9}{'p99/pre':>9}{'avg/base':>10}{'p99/base':>10}")
for name, (a, p, ios) in rows:
    print(f"{name:<30}{a:>9.1f}{p:>9.1f}{a/pre_avg:>9.3f}{p/pre_p99:>9.3f}{a/b_avg:>10.3f}{p/b_p99:>10.3f}")
if finished:
    print(f"rebuild time (die failure to last page rebuilt): {rebuild:.2f} s virtual "
          f"({m['rebuild_stripes']} stripes at scale {scale}; the full card has {1/scale:.0f}x the pages)")
else:
    print(f"rebuild NOT finished within the run ({m['rebuild_stripes']} stripes so far): raise DURATION")
print(f"degraded sector reads: adaptive {m['degraded_sector_reads']}, basic {basic['media'][0]['degraded_sector_reads']}")
print(f"lost sectors: adaptive {m['lost_sectors']}, basic {basic['media'][0]['lost_sectors']}; "
      f"silent corruptions {m['silent_corruptions'] + basic['media'][0]['silent_corruptions']}")
PY
rm -rf "$dir"
