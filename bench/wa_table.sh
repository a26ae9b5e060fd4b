#!/usr/bin/env bash
# Write amplification of every GC victim policy (greedy, cost-benefit,
# d-choices:2, d-choices:10, fifo, windowed:64) under uniform random 4 KiB
# writes at 7/20/28/36/50 % spare, next to the analytic greedy limit
# (Lambert W), with each ratio; exits non-zero if greedy is more than 5 %
# off. WA_LEBS (default 4096 erase units of 256 sectors) and WA_SEED
# (default 1) change the card and the write stream.
# Then the hot/cold rows (issue 28): fio zoned:80/20:20/80 and
# zoned:90/10:10/90 at 12/20/28 % spare, greedy victims: --placement
# single next to an independent greedy simulator in the bench (target
# within 10 %), hot-cold (online classifier, adaptive spare) within 15 %
# of the best static two-pool split the bench finds by search, streams
# (the hot zone as a stream) within 10 % of it; exits non-zero on a miss.
# WA_HOTCOLD=0 skips them. Progress (one line per finished cell, with
# the wall time) and any missed target go to stderr (kept:
# cargo's -q already silences the build).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -q -p ftl --bench wa_table
