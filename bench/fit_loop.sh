#!/usr/bin/env bash
# The black-box loop of issue 29 at a larger scale (the CI test,
# crates/cli/tests/fit_loop.rs, runs it at scale 0.01): attach a card from
# a preset file the lab is not told, review its loop device at stock, fit
# the preset from that review alone, predict 4K random write and 8K 70/30 at
# another over-provisioning, format the card there and review it again.
#   bench/fit_loop.sh [SCALE] [OP]     (defaults 0.02, 30%)
# Needs root, /dev/fuse and loop devices. Prints predicted vs measured.
set -euo pipefail
SCALE=${1:-0.02}
OP=${2:-30%}
VSL=${VSL:-target/release/vsl}
W=$(mktemp -d /tmp/fit_loop.XXXXXX)
export OPENVSL_RUN_DIR=$W/run OPENVSL_STATE_DIR=$W/state
trap '$VSL detach --all >/dev/null 2>&1 || true' EXIT
echo "# $(date -u +%FT%TZ) scale $SCALE op $OP; load: $(uptime)"
$VSL devices --show iodrive-duo-640-mlc |
  sed -e 's/^reserved_fraction = .*/reserved_fraction = 0.18/' \
      -e 's/^gc_share = .*/gc_share = 0.35/' >"$W/hidden.toml"
grep -q '^reserved_fraction = 0.18$' "$W/hidden.toml"
cat >"$W/plan.toml" <<PLAN
profiles = ["4k-randwrite", "8k-7030"]
matrix_threads = [16]
matrix_qd = [16]
real_round = "5s"
real_window = "10s"
real_phase_limit = "600s"
standard = false
sysbench = false
ioanalyzer = false
PLAN
dev=$($VSL attach --store "$W/store" --device "$W/hidden.toml" --member 0 --scale "$SCALE" | cut -f1)
$VSL review --target "blockdev:$dev" --plan "$W/plan.toml" --out "$W/stock" -q
$VSL fit "$W/stock/lab_results.json" --device iodrive-duo-640-mlc --member 0 --scale "$SCALE" \
  --free vsl.reserved_fraction,vsl.gc_share --predict "op=$OP" \
  --out "$W/fitted.toml" --json "$W/fit.json"
$VSL detach --all
$VSL format "$W/store" --overprovision "$OP" -y
dev=$($VSL attach --store "$W/store" | cut -f1)
$VSL review --target "blockdev:$dev" --plan "$W/plan.toml" --out "$W/op" -q
$VSL detach --all
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
fit = json.load(open(f"{w}/fit.json"))
op = json.load(open(f"{w}/op/lab_results.json"))["targets"][0]
pred = {p["figure"]: p["predicted"] for p in fit["predictions"]}
for prof in op["profiles"]:
    m = prof["matrix"][0]
    for stat, key in (("iops", "iops"), ("mean_lat_us", "lat_avg_us")):
        name = [k for k in pred if k.startswith(prof["profile"] + " ") and k.endswith(" " + stat)][0]
        p, v = pred[name], m["stats"][key]
        print(f"{prof['profile']:<14} {stat:<12} predicted {p:10.1f} measured {v:10.1f} ({(p / v - 1) * 100:+.1f} %)")
for q in fit["parameters"]:
    print(f"{q['name']:<24} fitted {q['fitted']:.4f} (hidden: reserved_fraction 0.18, gc_share 0.35) bound {q['at_bound']}")
PY
echo "work dir: $W"
