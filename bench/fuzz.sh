#!/usr/bin/env bash
# Longer fuzzing (issue 11). With cargo-fuzz and a nightly toolchain: every
# target in fuzz/ for SECONDS (default 60) each under libFuzzer. Always: the
# stable-Rust fuzz tests with FUZZ_CASES (default 200,000; the FTL targets
# a tenth of it) and a fresh FUZZ_SEED (printed; set it to reproduce).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${SECONDS:-60}
CASES=${FUZZ_CASES:-200000}
SEED=${FUZZ_SEED:-$(date +%s)}
echo "FUZZ_SEED=$SEED FUZZ_CASES=$CASES"
if command -v cargo-fuzz >/dev/null && rustup toolchain list | grep -q nightly; then
  (cd fuzz && for t in $(cargo +nightly fuzz list); do
    echo "== cargo fuzz $t (${SECONDS_EACH}s)"
    cargo +nightly fuzz run "$t" -- -max_total_time="$SECONDS_EACH" 2>&1 | tail -2
  done)
else
  echo "(cargo-fuzz or nightly not installed: stable fuzz tests only)"
fi
export FUZZ_SEED=$SEED
start=$(date +%s.%N)
FUZZ_CASES=$CASES cargo test --release -q -p workload --test fuzz_parsers 2>&1 | grep -E "test result|panicked"
FUZZ_CASES=$CASES cargo test --release -q -p vsl --test fuzz_plans 2>&1 | grep -E "test result|panicked"
FUZZ_CASES=$((CASES / 10)) cargo test --release -q -p blockdev --test fuzz_files 2>&1 | grep -E "test result|panicked"
FUZZ_CASES=$((CASES / 10)) cargo test --release -q -p ftl --test fuzz_ops 2>&1 | grep -E "test result|panicked"
FUZZ_CASES=$CASES cargo test --release -q -p web --test fuzz_http 2>&1 | grep -E "test result|panicked"
end=$(date +%s.%N)
python3 -c "print(f'stable fuzz tests: {float($end) - float($start):.0f} s wall')"
