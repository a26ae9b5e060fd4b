#!/usr/bin/env bash
# Write amplification of every GC victim policy (greedy, cost-benefit,
# d-choices:2, d-choices:10, fifo, windowed:64) under uniform random 4 KiB
# writes at 7/20/28/36/50 % spare, next to the analytic greedy limit
# (Lambert W), with each ratio; exits non-zero if greedy is more than 5 %
# off. WA_LEBS (default 4096 erase units of 256 sectors) and WA_SEED
# (default 1) change the card and the write stream.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p ftl --bench wa_table 2>/dev/null
