#!/usr/bin/env bash
# Application level (issue 4): PostgreSQL pgbench (TPC-B like) on the
# attached card, in stock and high-performance (hp) format, timing model.
# Reports TPS and average / 99th-percentile transaction latency per format.
# The card is first brought to steady state as the reviews do (workload
# independent preconditioning: the whole device written sequentially, then
# once more in random 4 KiB writes, at emulator speed with --timing none),
# then re-attached with the model's timing and formatted with ext4 without
# discard, so PostgreSQL's writes meet a full, fragmented card and its GC.
# Needs root, /dev/fuse, loop devices and PostgreSQL (scripts/setup.sh).
# Knobs: SCALE_CARD (--scale of the card, default 0.01), PGSCALE (pgbench
# -s, default 20), CLIENTS (default 8), SECONDS_RUN (default 60), JSON_OUT
# (also write the results as JSON there, for `vsl review --pgbench FILE`).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
cargo build --release -q -p blockdev
BIN=$PWD/$CARGO_TARGET_DIR/release/vsl-blockdev
[ -x "$BIN" ] || BIN=$CARGO_TARGET_DIR/release/vsl-blockdev
PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
SCALE_CARD=${SCALE_CARD:-0.01}
PGSCALE=${PGSCALE:-20}
CLIENTS=${CLIENTS:-8}
SECONDS_RUN=${SECONDS_RUN:-60}
PORT=54329
work=$(mktemp -d /tmp/openvsl-pgbench.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run
cleanup() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -m immediate stop >/dev/null 2>&1 || true
  umount "$work/mnt" 2>/dev/null || true
  "$BIN" detach --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

results=()
for format in stock hp; do
  dev=$("$BIN" attach --store "$work/store-$format" --device iodrive-duo-640-mlc --member 0 \
    --scale "$SCALE_CARD" --format "$format" --timing none | cut -f1)
  echo "$format: preconditioning $dev (sequential fill, then one capacity of random 4K writes)" >&2
  fio --name=seq --filename="$dev" --rw=write --bs=1m --direct=1 --ioengine=libaio --iodepth=16 \
    --size=100% --output-format=terse >/dev/null
  fio --name=rnd --filename="$dev" --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32 \
    --numjobs=2 --offset_increment=50% --size=50% --output-format=terse >/dev/null
  pre_wa=$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])[0]["members"][0]["write_amplification"],2))' "$("$BIN" status --json)")
  "$BIN" detach --all >/dev/null
  echo "$format: preconditioned (WA $pre_wa over the preconditioning); ext4 + PostgreSQL, timing model" >&2
  dev=$("$BIN" attach --store "$work/store-$format" | cut -f1)
  mkfs.ext4 -q -F -E nodiscard "$dev"
  mkdir -p "$work/mnt"
  mount "$dev" "$work/mnt"
  mkdir "$work/mnt/pgdata" && chown postgres: "$work/mnt/pgdata"
  runuser -u postgres -- "$PGBIN/initdb" -D "$work/mnt/pgdata" >/dev/null 2>&1
  logdir=$work/mnt/pglog && mkdir "$logdir" && chown postgres: "$logdir"
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -l "$logdir/server.log" \
    -o "-p $PORT -k $logdir -c listen_addresses=''" -w start >/dev/null
  runuser -u postgres -- pgbench -h "$logdir" -p $PORT -i -q -s "$PGSCALE" postgres >/dev/null 2>&1
  out=$(cd "$logdir" && runuser -u postgres -- pgbench -h "$logdir" -p $PORT -c "$CLIENTS" \
    -j 2 -T "$SECONDS_RUN" -l postgres 2>/dev/null)
  tps=$(grep -oP 'tps = \K[0-9.]+' <<<"$out" | head -1)
  p99=$(cat "$logdir"/pgbench_log.* | awk '{print $3}' | sort -n |
    awk '{a[NR]=$1} END {i=int(NR*0.99); if (i<1) i=1; printf "%.2f", a[i]/1000}')
  avg=$(grep -oP 'latency average = \K[0-9.]+' <<<"$out")
  status=$("$BIN" status --json)
  wa=$(python3 -c 'import json,sys; print(round(json.loads(sys.argv[1])[0]["members"][0]["write_amplification"],2))' "$status")
  results+=("$format $tps $avg $p99 $wa $pre_wa")
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -m fast stop >/dev/null
  umount "$work/mnt"
  "$BIN" detach --all >/dev/null
done
echo "pgbench -s $PGSCALE, $CLIENTS clients, ${SECONDS_RUN}s, iodrive-duo-640-mlc ioDimm 0 at --scale $SCALE_CARD, timing model"
printf "%-8s %10s %14s %14s %6s\n" format TPS "avg lat ms" "p99 lat ms" "WA (init + run)"
for r in "${results[@]}"; do
  read -r f t a p w _ <<<"$r"
  printf "%-8s %10s %14s %14s %6s\n" "$f" "$t" "$a" "$p" "$w"
done
if [ -n "${JSON_OUT:-}" ]; then
  python3 - "$JSON_OUT" "$PGSCALE" "$CLIENTS" "$SECONDS_RUN" "$SCALE_CARD" "${results[@]}" <<'PY'
import json, sys
out, pgscale, clients, secs, card_scale = sys.argv[1:6]
rows = []
for r in sys.argv[6:]:
    f, tps, avg, p99, wa, pre = r.split()
    rows.append({"target": f"iodrive-duo-640-mlc:{f}", "format": f, "tps": float(tps),
                 "latency_avg_ms": float(avg), "latency_p99_ms": float(p99),
                 "write_amplification": float(wa), "precondition_write_amplification": float(pre)})
json.dump({"tool": "pgbench", "pgbench_scale": int(pgscale), "clients": int(clients),
           "seconds": int(secs), "card": "iodrive-duo-640-mlc ioDimm 0", "card_scale": float(card_scale),
           "timing": "model", "results": rows}, open(out, "w"), indent=2)
print(f"results: {out}")
PY
fi
