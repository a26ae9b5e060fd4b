#!/usr/bin/env bash
# The host write bandwidth of the steady 8K 70/30 load over that of the
# steady 4K random write (both 16T/16Q), stock and hp, for each preset file
# given: 0.6 x (70/30 IOPS) / (4K write IOPS). Scale 0.05, 60 s windows.
# Run from the repository root: bench/results/mixed-ratio-2026-12-07/ratio.sh F.toml...
set -euo pipefail
VSL=${VSL:-target/release/vsl}
json=$(mktemp)
for f in "$@"; do
  "$VSL" validate --scale 0.05 --window 60s --format both --rows "16T/16Q" \
    --device "$f" -j 2 --json "$json" >/dev/null 2>"$json.err" || { cat "$json.err" >&2; exit 1; }
  python3 - "$f" "$json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[2]))["rows"]
def row(fm, start):
    return [r["model"] for r in rows if r["format"] == fm and r["test"].startswith(start)][0]
out = []
for fm in ("stock", "hp"):
    w, m = row(fm, "4K steady-state write 16T"), row(fm, "8K 70/30 steady")
    out.append(f"{fm} 4K write {w:7.0f} 70/30 {m:7.0f} ratio {0.6 * m / w:.3f}")
print(f"{sys.argv[1]:<28} " + " | ".join(out))
PY
done
rm -f "$json" "$json.err"
