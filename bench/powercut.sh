#!/usr/bin/env bash
# Power cut (issue 4): kills the attach daemon with SIGKILL at CUTS (default
# 100) random moments during a verified 4-writer O_DIRECT write stream,
# re-attaches after each and checks that every acknowledged write is there.
# Needs root, /dev/fuse and loop devices. Seed: VSL_TEST_SEED.
set -euo pipefail
cd "$(dirname "$0")/.."
export VSL_POWERCUTS=${CUTS:-100}
cargo test --release -q -p blockdev --test powercut -- --nocapture 2>&1 |
  grep -E "power-cut test|test result|panicked|block |SKIPPED"
