#!/usr/bin/env bash
# The black-box loop of issue 29 at a larger scale (the CI test,
# crates/cli/tests/fit_loop.rs, runs it at scale 0.02): attach a card from
# a preset file the lab is not told, review its loop device at stock, fit
# the preset from that review alone, predict 4K random write and 8K 70/30 at
# another over-provisioning, format the card there and review it again.
#   bench/fit_loop.sh [SCALE] [OP]     (defaults 0.03, 20%)
# Needs root, /dev/fuse and loop devices. Prints predicted vs measured, and
# the hidden card's own model in virtual time beside each measurement: a
# measurement under 80 % of it is marked HOST-LIMITED (the FUSE and loop
# path of this machine, not the card, set the rate; on this 2-core VM that
# is about 45-55 K IOPS at 4 KiB, which a 30 % over-provisioned card at
# 16T/16Q exceeds; hence the default 20 %). WORK=DIR puts the work
# directory, and with it the attached card's store, under DIR (default
# /tmp; e.g. /dev/shm to take this machine's disk out of the loop: at
# 0.03 the store is 12 GB, and on this VM's disk its writeback held the
# attached card's 4K writes to 0.86 of its model, 0.96 in RAM; the work
# directory is left for reading, so remove it after).
set -euo pipefail
SCALE=${1:-0.03}
OP=${2:-20%}
VSL=${VSL:-target/release/vsl}
W=$(mktemp -d "${WORK:-/tmp}/fit_loop.XXXXXX")
export OPENVSL_RUN_DIR=$W/run OPENVSL_STATE_DIR=$W/state
trap '$VSL detach --all >/dev/null 2>&1 || true' EXIT
echo "# $(date -u +%FT%TZ) scale $SCALE op $OP; load: $(uptime)"
$VSL devices --show iodrive-duo-640-mlc |
  sed -e 's/^reserved_fraction = .*/reserved_fraction = 0.18/' \
      -e 's/^gc_share = .*/gc_share = 0.35/' >"$W/hidden.toml"
grep -q '^reserved_fraction = 0.18$' "$W/hidden.toml"
# Measurement windows of 30 s: with 10 s (the CI test's) at scale 0.03 the
# review's figures came out 0.88-1.14 of the hidden card's own model, the
# stock card's stop-and-go cycles landing in the window or not.
cat >"$W/plan.toml" <<PLAN
profiles = ["4k-randwrite", "8k-7030"]
matrix_threads = [16]
matrix_qd = [16]
real_round = "5s"
real_window = "30s"
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
# The hidden card's own model in virtual time, at both formats: what the
# attached card should have delivered had the host kept up.
for fmt in stock op; do
  case $fmt in stock) f=(--format stock) ;; op) f=(--overprovision "$OP") ;; esac
  for prof in 4k-randwrite 8k-7030; do
    $VSL run --device "$W/hidden.toml" --member 0 --scale "$SCALE" "${f[@]}" --precondition \
      --warmup 300s --duration 60s --profile "$prof" -q --json "$W/model-$fmt-$prof.json" >/dev/null
  done
done
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
for fmt in ("stock", "op"):
    res = json.load(open(f"{w}/{fmt}/lab_results.json"))["targets"][0]
    for prof in res["profiles"]:
        v = prof["matrix"][0]["stats"]["iops"]
        m = json.load(open(f"{w}/model-{fmt}-{prof['profile']}.json"))["summary"]["iops"]
        flag = "  HOST-LIMITED: the attached card fell short of its own model" if v < 0.8 * m else ""
        print(f"{fmt:<5} {prof['profile']:<14} measured {v:10.1f} IOPS, the hidden card's model {m:10.1f} ({v / m:.2f}){flag}")
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
