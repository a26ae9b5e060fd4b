#!/usr/bin/env bash
# Issue 3 figure: a full default review of iodrive-duo-640-mlc stock vs hp at
# full capacity in virtual time (every profile preconditioned to SNIA steady
# state or 6 virtual hours, the 16-point matrix, standard, sysbench and
# I/O Analyzer tests). Prints the wall time, the simulated I/O count and the
# ratio to the 30-minute budget.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p vsl
OUT=${OUT:-target/review-full}
start=$(date +%s.%N)
target/release/vsl review --target iodrive-duo-640-mlc:stock --target iodrive-duo-640-mlc:hp \
  --out "$OUT" -q
end=$(date +%s.%N)
python3 - "$start" "$end" "$OUT/lab_results.json" <<'PY'
import json, sys
wall = float(sys.argv[2]) - float(sys.argv[1])
d = json.load(open(sys.argv[3]))
ios = sum(t["ios"] for t in d["targets"])
print(f"full default review, 2 targets, full capacity: {wall/60:.1f} min wall, {ios/1e9:.2f} G simulated I/Os ({ios/wall/1e6:.2f} M/s)")
print(f"ratio to the 30-minute budget: {wall/1800:.2f}  (target <= 1.0)")
for t in d["targets"]:
    for p in t["profiles"]:
        conv = "reused" if p["reused_state"] else (f"round {p['converged_round']}" if p["converged_round"] else "not converged")
        print(f"  {t['label']:<28} {p['profile']:<14} steady state: {conv} of {len(p['precondition'])}")
PY
