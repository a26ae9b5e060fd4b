#!/usr/bin/env bash
# Issue 30: fio job files.
#  1. fio's own examples/ (the fetched repository, FIO_GIT_DIR or
#     /work/.mirror/axboe+fio/repo): how many parse, how many are refused
#     and for which option (the test skips loudly without the repository).
#  2. docs/fio/ssd-phases.fio as fio reads it (`fio --parse-only`) and on the
#     same file run by fio and by `vsl run JOB --target file:...`, one after
#     the other on the file written out first: IOPS per phase and the
#     ratio vsl/fio (the same job file means the same workload to both).
# usage: bench/fio_jobfile.sh   DIR=/var/tmp (the test file's directory), ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
echo "== fio examples/"
cargo test --release -q -p workload --test fio_examples -- --nocapture 2>&1 \
  | grep -E "^(fio examples|refused for|SKIPPED)" | head -12
command -v fio >/dev/null || { echo "fio not found: run scripts/setup.sh (part 2 skipped)" >&2; exit 0; }
cargo build -q --release --bin vsl
vsl="$CARGO_TARGET_DIR/release/vsl"
job=docs/fio/ssd-phases.fio
dir=${DIR:-/var/tmp}
out=$(mktemp -d)
export FILE="$dir/vsl-fio-jobfile.img"
trap 'rm -rf "$out" "$FILE"' EXIT
echo "== fio --parse-only $job: $(fio --parse-only "$job" >/dev/null 2>&1 && echo accepted || echo REFUSED)"
# Written out first, so that neither tool meets unwritten extents.
dd if=/dev/zero of="$FILE" bs=1M count=256 oflag=direct status=none
rounds=${ROUNDS:-3}
for r in $(seq 1 "$rounds"); do
  # The order alternates between rounds: the machine is shared and noisy.
  if (( r % 2 )); then
    "$vsl" run "$job" --target "file:$FILE:256M" -q --json "$out/vsl.$r.json"
    fio --output-format=json "$job" > "$out/fio.$r.json"
  else
    fio --output-format=json "$job" > "$out/fio.$r.json"
    "$vsl" run "$job" --target "file:$FILE:256M" -q --json "$out/vsl.$r.json"
  fi
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    ours = json.load(open(f"{out}/vsl.{r}.json"))
    fio = json.load(open(f"{out}/fio.{r}.json"))["jobs"]
    for o, f in zip(ours, fio):
        a = o["summary"]["iops"]
        b = f["read"]["iops"] + f["write"]["iops"]
        rows.setdefault(o["job"], []).append((a, b, a / b))
print(f"{rounds} rounds; median IOPS and the median ratio vsl/fio (range)")
print(f"{'phase':<12}{'vsl IOPS':>12}{'fio IOPS':>12}{'vsl/fio':>9}  range")
for job, v in rows.items():
    med = lambda i: statistics.median(x[i] for x in v)
    lo, hi = min(x[2] for x in v), max(x[2] for x in v)
    print(f"{job:<12}{med(0):>12.0f}{med(1):>12.0f}{med(2):>9.2f}  {lo:.2f}-{hi:.2f}")
PY
