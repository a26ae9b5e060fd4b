#!/usr/bin/env bash
# Power cut: kills the attach daemon with SIGKILL at CUTS (default 100)
# random moments and re-attaches after each.
#   issue 4  (test powercut): during a verified 4-writer O_DIRECT write
#            stream; every acknowledged write must be there.
#   issue 11 (test atomic_powercut): the same with 3 threads submitting
#            atomic writes (64 groups of 4 non-contiguous written ranges and
#            1 range written or trimmed by turns) in flight; no group may
#            show partially applied.
# TESTS picks them: "powercut atomic_powercut" (default), or one of them.
# Needs root, /dev/fuse and loop devices. Seed: VSL_TEST_SEED.
set -euo pipefail
cd "$(dirname "$0")/.."
export VSL_POWERCUTS=${CUTS:-100}
for t in ${TESTS:-powercut atomic_powercut}; do
  cargo test --release -q -p blockdev --test "$t" -- --nocapture 2>&1 |
    grep -E "power-cut test|test result|panicked|PARTIAL|block |group |SKIPPED"
done
