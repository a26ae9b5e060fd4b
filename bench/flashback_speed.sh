#!/usr/bin/env bash
# What Flashback and the media-error model cost the simulation (issue 11):
# simulated I/Os per wall second of `vsl run` on one ioDimm at --scale 0.05,
# 8K 70/30 at 16T/16Q for 30 s of virtual time after a fill, default path
# (both off) vs --media-errors on vs --fail-die, each with its ratio to the
# default path measured in the same run. BASE_VSL=path/to/vsl adds a binary
# built from before the change (the default path's "before").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p vsl
VSL=target/release/vsl
REPS=${REPS:-3}
args=(run --device iodrive-duo-640-mlc --member 0 --scale 0.05 --precondition
  --profile 8k-7030 --threads 16 --qd 16 --duration 30s --interval 10s --seed 1)
rate() { # best of REPS (the machine is shared): M simulated I/Os per wall second
  local bin=$1; shift
  for _ in $(seq "$REPS"); do
    "$bin" "${args[@]}" "$@" | grep -oP '\(\K[0-9.]+(?= M I/Os per wall second)'
  done | sort -g | tail -1
}
default=$(rate "$VSL")
media=$(rate "$VSL" --media-errors on)
faildie=$(rate "$VSL" --fail-die 29@5s)
base=${BASE_VSL:+$(rate "$BASE_VSL")}
python3 - "$default" "$media" "$faildie" "${base:-}" <<'PY'
import sys
d, m, f = map(float, sys.argv[1:4])
b = sys.argv[4]
print(f"{'path':<40}{'M I/Os per wall s':>18}{'ratio':>8}")
if b:
    print(f"{'before issue 11 (BASE_VSL)':<40}{float(b):>18.3f}{float(b)/d:>8.3f}")
print(f"{'default (failures and media errors off)':<40}{d:>18.3f}{1.0:>8.3f}")
print(f"{'--media-errors on':<40}{m:>18.3f}{m/d:>8.3f}")
print(f"{'--fail-die 29@5s (adaptive rebuild)':<40}{f:>18.3f}{f/d:>8.3f}")
PY
