#!/usr/bin/env bash
# The hp File Server probes of 2026-12-03 (docs/MODEL.md, "Read priority
# with GC reads in order"), 0.05 cards, virtual time (deterministic).
# VSL: the vsl binary (default: target/release/vsl of the checkout).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
VSL=${VSL:-$root/target/release/vsl}
P=$root/bench/results/priority-2026-12-02
fs() { # preset, extra options...
  local dev=$1; shift
  "$VSL" run --device "$dev" --format hp --scale 0.05 --precondition --profile fileserver \
    --warmup 300s --duration 60s --interval 10s "$@" 2>&1 |
    awk -v d="$(basename "$dev" .toml)" -v o="$*" '/^IOPS/{i=$2} /^latency avg/{l=$3} /^write ampl/{w=$3}
      END{printf "%-22s %-28s IOPS %6d  latency %5.2f ms  WA %s\n", d, o, i, l/1000, w}'
}
echo "# File Server at hp, 16T unless said; 0.05 card, fill + 300 s of the load, 60 s measured"
fs iodrive-duo-640-mlc
fs iodrive-duo-640-mlc --sector-size 512
fs "$P/bgio24o.toml"
fs "$P/bgio24o.toml" --sector-size 512
for q in 4 8 32; do fs "$P/bgio24o.toml" --qd $q; done
echo "# the same preset with a smaller write buffer (vsl.buffer_units), vsl validate rows"
tmp=$(mktemp -d)
for b in 8 4; do
  sed "s/^buffer_units = .*/buffer_units = $b/; s/^name = .*/name = \"bgio24o-b$b\"/" "$P/bgio24o.toml" > "$tmp/b$b.toml"
  "$VSL" validate --scale 0.05 --format hp -j 1 --window 60s --device "$tmp/b$b.toml" 2>&1 |
    grep -E '^hp +(8K 70/30|File Server)' | sed "s/^/buffer $b: /"
done
rm -rf "$tmp"
