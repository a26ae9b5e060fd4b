#!/usr/bin/env bash
# Sweep speed-up: a 32-run sweep (4 formats x 8 seeds, 4K random writes on
# a 1 % card after a fill) on the local pool, one worker per core, next to
# the same 32 runs one after another (--workers 1), measured in the same
# run, alternating, ROUNDS times; prints the median wall times and the
# median of the per-round ratios (target >= 1.8 on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p vsl
VSL=$PWD/target/release/vsl
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-20s}
WORKERS=${WORKERS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/plan.toml" <<TOML
scale = 0.01
precondition = true
profile = "4k-randwrite"
duration = "$DURATION"
interval = "5s"
format = ["stock", "hp", "improved-write", "max-write"]
seed = [1, 2, 3, 4, 5, 6, 7, 8]
TOML
wall() { # workers out -> "wall_s cpu_s" (cpu: user + sys, to show the cores obtained)
  /usr/bin/time -f "%e %U %S" -o "$work/time" "$VSL" sweep "$work/plan.toml" --out "$2" --workers "$1" -q
  read -r e u s <"$work/time"
  python3 -c "print($e, $u + $s)"
}
seq_s=(); pool_s=(); seq_cpu=(); pool_cpu=()
for r in $(seq 1 "$ROUNDS"); do
  rm -rf "$work/seq" "$work/pool"
  read -r w c < <(wall 1 "$work/seq"); seq_s+=("$w"); seq_cpu+=("$c")
  read -r w c < <(wall "$WORKERS" "$work/pool"); pool_s+=("$w"); pool_cpu+=("$c")
  # Same runs, same results: the pool changes only the wall time.
  diff -r "$work/seq/runs" "$work/pool/runs" >/dev/null
  echo "round $r: one after another ${seq_s[-1]} s, pool of $WORKERS ${pool_s[-1]} s" >&2
done
python3 - "$WORKERS" "${seq_s[*]}" "${pool_s[*]}" "${seq_cpu[*]}" "${pool_cpu[*]}" <<'PY'
import statistics, sys
workers = int(sys.argv[1])
seq, pool, seq_cpu, pool_cpu = ([float(x) for x in a.split()] for a in sys.argv[2:6])
ratios = [s / p for s, p in zip(seq, pool)]
print(f"32 runs one after another (--workers 1), median: {statistics.median(seq):.2f} s")
print(f"32 runs on the local pool (--workers {workers}), median: {statistics.median(pool):.2f} s")
cores = lambda cpu, wall: statistics.median(c / w for c, w in zip(cpu, wall))
print(f"CPU obtained (user+sys / wall), median: one after another {cores(seq_cpu, seq):.2f} cores, pool {cores(pool_cpu, pool):.2f} cores")
print(f"speed-up, median of {len(ratios)} rounds: {statistics.median(ratios):.2f}x  (target >= 1.8 on 2 cores; rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
PY
