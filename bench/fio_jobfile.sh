#!/usr/bin/env bash
# Issue 30: fio job files.
#  1. fio's own examples/ (the fetched repository, FIO_GIT_DIR or
#     /work/.mirror/axboe+fio/repo): how many parse, how many are refused
#     and for which option (the test skips loudly without the repository).
#  2. docs/fio/ssd-phases.fio as fio reads it (`fio --parse-only`) and on the
#     same file run by fio and by `vsl run JOB --target file:...`, one after
#     the other: IOPS per phase and the ratio vsl/fio (the same job file
#     means the same workload to both).
# usage: bench/fio_jobfile.sh        DIR=/var/tmp  directory of the test file
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
"$vsl" run "$job" --target "file:$FILE:256M" -q --json "$out/vsl.json"
fio --output-format=json "$job" > "$out/fio.json"
python3 - "$out/vsl.json" "$out/fio.json" <<'PY'
import json, sys
ours = json.load(open(sys.argv[1]))
fio = json.load(open(sys.argv[2]))["jobs"]
print(f"{'phase':<12}{'vsl IOPS':>12}{'fio IOPS':>12}{'vsl/fio':>9}")
for r, f in zip(ours, fio):
    a = r["summary"]["iops"]
    b = f["read"]["iops"] + f["write"]["iops"]
    print(f"{r['job']:<12}{a:>12.0f}{b:>12.0f}{a / b:>9.2f}")
PY
