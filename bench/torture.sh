#!/usr/bin/env bash
# Power-cut campaign (issue 11): CUTS (default 100,000) power cuts at random
# NAND operation boundaries on ioMemory 0 of a scaled card (default
# iodrive-duo-320-slc at scale 0.001, the smallest preset card), each followed
# by recovery (checkpoint + OOB scan) and a read-back check against the
# reference model. Prints the campaign's figures and its cuts per wall
# second, next to the baseline measured in the same run: the same host
# calls on a plain VSL with no cut, recovery or check (--baseline). Also the
# recovery time with and without periodic checkpoints (500 cuts each).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p vsl
VSL=target/release/vsl
CUTS=${CUTS:-100000}
SEED=${SEED:-1}
DEVICE=${DEVICE:-iodrive-duo-320-slc}
SCALE=${SCALE:-0.001}
MAXCALLS=${MAXCALLS:-20}
common=(--device "$DEVICE" --scale "$SCALE" --seed "$SEED" --max-calls "$MAXCALLS")
out=$(mktemp); base=$(mktemp); ck=$(mktemp); nock=$(mktemp)
trap 'rm -f "$out" "$base" "$ck" "$nock"' EXIT
"$VSL" torture --power-cuts "$CUTS" "${common[@]}" --json --progress-lines >"$out"
"$VSL" torture --power-cuts "$CUTS" "${common[@]}" --json --baseline >"$base"
"$VSL" torture --power-cuts 500 "${common[@]}" --max-calls 400 --json >"$ck"
"$VSL" torture --power-cuts 500 "${common[@]}" --max-calls 400 --checkpoint-lebs 0 --json >"$nock"
python3 - "$out" "$base" "$ck" "$nock" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
ck = json.load(open(sys.argv[3])); nock = json.load(open(sys.argv[4]))
rep = r["report"]; rec = rep["recovery"]
calls = rep["writes_acked"] + rep["trims_acked"] + rep["cuts"]
print(f"card: {r['device']} scale {r['scale']}, ioMemory 0, {r['user_sectors']} sectors of {r['sector_bytes']} B, checkpoint every {r['checkpoint_lebs']} erase units")
print(f"power cuts: {rep['cuts']}, acknowledged writes: {rep['writes_acked']} ({rep['atomic_writes_acked']} atomic), trims: {rep['trims_acked']}")
print(f"sectors checked: {rep['sectors_checked']} ({rep['full_checks']} full read-backs), cuts in atomic writes: {rep['cuts_in_atomic']}, torn checkpoints: {rep['torn_checkpoints']}")
print(f"recovery time min/avg/max: {rec['min_ns']/1e6:.3f} / {rec['avg_ns']/1e6:.3f} / {rec['max_ns']/1e6:.3f} ms")
print(f"lost: {rep['lost']}, trimmed data back: {rep['resurrected']}, half-applied atomic writes: {rep['torn_atomic']}")
cps = r["cuts_per_wall_s"]
campaign_calls_s = calls / r["wall_s"]
print(f"cuts per wall second: {cps:.0f}  (campaign host calls per wall second {campaign_calls_s:.0f})")
print(f"baseline, same host calls without cuts: {b['calls_per_wall_s']:.0f} calls per wall second")
print(f"ratio campaign / baseline (host calls per wall second): {campaign_calls_s / b['calls_per_wall_s']:.4f}")
a = ck["report"]["recovery"]["avg_ns"]; n = nock["report"]["recovery"]["avg_ns"]
print(f"recovery avg with checkpoints every {ck['checkpoint_lebs']} erase units: {a/1e6:.3f} ms; with none but format/recovery: {n/1e6:.3f} ms; ratio {n/a:.2f}")
bad = rep["lost"] + rep["resurrected"] + rep["torn_atomic"]
sys.exit(1 if bad else 0)
PY
