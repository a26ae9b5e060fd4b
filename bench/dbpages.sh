#!/usr/bin/env bash
# Atomic writes vs the doublewrite buffer (issue 11): an InnoDB-style page
# flush (batches of 128 random 16 KiB pages, table = half the device) on
# ioMemory 0 of a scaled card in virtual time, once through a doublewrite
# buffer (the baseline, same run) and once with one atomic write per page.
# Prints host and NAND bytes written and page throughput of each.
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${PRESET:-iodrive-duo-640-mlc}
SCALE=${SCALE:-0.01}
BATCHES=${BATCHES:-2000}
cargo run --release -q -p lab --example dbpages -- "$PRESET" "$SCALE" "$BATCHES"
