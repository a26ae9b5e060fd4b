#!/usr/bin/env bash
# Greedy-GC write amplification vs the Lambert-W limit at 7/20/28/36/50 % spare.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p ftl --bench wa_table 2>/dev/null
