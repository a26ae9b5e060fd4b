#!/usr/bin/env bash
# Every figure the issues name, each with its baseline from the same run.
set -euo pipefail
cd "$(dirname "$0")"
echo "== write amplification vs analytic limit"; ./wa_table.sh
echo; echo "== simulation speed vs fio null engine"; ./speed.sh
echo; echo "== validation table (scale 0.05)"; ./validate --window 60s
