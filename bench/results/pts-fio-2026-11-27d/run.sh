#!/usr/bin/env bash
# Issue 31: fio to its own steady state (ss=) against the lab, both on 2 MiB
# pages, the lab bracketing fio at each point, six passes averaged.
set -euo pipefail
cd "$(dirname "$0")/../../.."
D=bench/results/pts-fio-2026-11-27d
F=/var/tmp/ptsint.img
date
/usr/bin/time -f "pts wall %e s" target/release/vsl pts --test iops --target file:$F:1G --round-time 1s --max-rounds 5 --mem huge --out $D/lab -y -q
date
/usr/bin/time -f "pts_fio wall %e s" env SS=1 MEM=huge PASSES=6 MODE=interleaved VSL=target/release/vsl bash bench/pts_fio.sh $D/lab $F
date
rm -f $F
