#!/usr/bin/env bash
# Every figure the issues name, each with its baseline from the same run.
# Long: the full review alone takes several minutes. Real-time benches need
# root, /dev/fuse and loop devices.
set -euo pipefail
cd "$(dirname "$0")"
echo "== issue 2: write amplification vs analytic limit"; ./wa_table.sh
echo; echo "== issue 2: simulation speed vs fio null engine"; ./speed.sh
echo; echo "== issue 2: validation table (full-size card)"; ./validate --scale 1 --window 120s
echo; echo "== issues 3, 33: the lab vs fio on a laid-out file and a loop device over it"; ./fio_agreement.sh 2 1G
echo; echo "== issue 30: fio job files: fio's examples/, and one job file run by fio and by vsl"; ./fio_jobfile.sh
echo; echo "== issue 3: full default review, stock vs hp"; ./review_full.sh
echo; echo "== issue 4: attach speed and added latency"; ./attach_speed.sh
echo; echo "== issue 4: 100 power cuts"; ./powercut.sh
echo; echo "== issue 4: pgbench, stock vs hp"; ./pgbench.sh
echo; echo "== issue 12: insert-heavy test on PostgreSQL (formats x sectors x partitions)"; ./pg_insert.sh
echo; echo "== issue 12: sysbench OLTP on MariaDB, stock vs hp"; ./sysbench_oltp.sh
echo; echo "== issue 10: cost of the live dashboard on a running simulation"; ./dashboard_cost.sh
echo; echo "== issue 12: sweep on the local pool vs one after another"; ./sweep_speedup.sh
echo; echo "== issue 11: Flashback degraded reads and rebuild"; ./flashback.sh
echo; echo "== issue 11: cost of Flashback and media errors on the simulation"; ./flashback_speed.sh
