#!/usr/bin/env bash
# Cost of trace capture on the attached card (issue 30): the same attached
# card measured with capture off and on (`vsl trace start DIR` / `stop`,
# the code path of `vsl attach --trace`, both formats), in alternating
# rounds so that a drift in the machine's load favours neither side:
#   1. fio 4 KiB random 70/30 read/write, QD 16, on the loop device: IOPS;
#   2. PostgreSQL pgbench (TPC-B like) on ext4 on the loop device: TPS.
# Prints every round and the ratio of the medians, traced / untraced
# (target: >= 0.95). Timing model, iodrive-duo-640-mlc ioDimm 0. On a
# loaded machine the rounds swing more than the cost, so it also prints the
# CPU the trace writer thread took as a share of the daemon's CPU over the
# traced rounds (from /proc, independent of the load).
# Needs root, /dev/fuse, loop devices, fio and PostgreSQL (scripts/setup.sh).
# Knobs: ROUNDS (3), FIO_SECONDS (20), PG_SECONDS (30), PGSCALE (10),
# CLIENTS (8), SCALE_CARD (0.01), NO_BUILD=1 (use target/release as is),
# TRACE_DIR (where the trace goes; default next to the store, on the same
# filesystem, whose journal commits the store's fdatasyncs share), PARTS
# (fio,pgbench), BIN (the vsl-blockdev binary to measure, e.g. an older
# build for an A/B).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p blockdev
BIN=${BIN:-$PWD/target/release/vsl-blockdev}
ROUNDS=${ROUNDS:-3}
FIO_SECONDS=${FIO_SECONDS:-20}
PG_SECONDS=${PG_SECONDS:-30}
PGSCALE=${PGSCALE:-10}
CLIENTS=${CLIENTS:-8}
SCALE_CARD=${SCALE_CARD:-0.01}
PORT=54331
work=$(mktemp -d /tmp/openvsl-tracecost.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run OPENVSL_STATE_DIR=$work/state
. bench/lib/pg_attached.sh
cleanup() {
  pg_cleanup
  "$BIN" detach --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
TRACE_DIR=${TRACE_DIR:-$work/trace}
PARTS=${PARTS:-fio,pgbench}
mkdir -p "$TRACE_DIR" "$work/mnt"
touch "$work/cpu"

dev=$("$BIN" attach --store "$work/store" --device iodrive-duo-640-mlc --member 0 \
  --scale "$SCALE_CARD" | cut -f1)
echo "attached $dev; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
daemon=$(python3 -c 'import json,glob; print(json.load(open(glob.glob("'"$work"'/run/*/state.json")[0]))["pid"])')
# CPU ticks (user + system) of the daemon, and of its trace writer thread.
ticks() {
  local all=0 writer=0 t
  for t in /proc/"$daemon"/task/*; do
    local v
    v=$(awk '{print $14 + $15}' "$t/stat" 2>/dev/null || echo 0)
    all=$((all + v))
    [ "$(cat "$t/comm" 2>/dev/null)" = vsl-trace ] && writer=$((writer + v))
  done
  echo "$all $writer"
}

# Runs "$@" (printing one number) with capture on or off; prints the number.
measured() {
  local traced=$1
  shift
  if [ "$traced" = on ]; then
    rm -f "$TRACE_DIR"/trace.*
    "$BIN" trace start "$TRACE_DIR" "$dev" >/dev/null
  fi
  local v t0 t1
  t0=$(ticks)
  v=$("$@")
  t1=$(ticks)
  if [ "$traced" = on ]; then
    "$BIN" trace stop "$dev" >/dev/null
    read -r a0 w0 <<<"$t0"
    read -r a1 w1 <<<"$t1"
    echo "    traced: the daemon used $((a1 - a0)) CPU ticks, its trace writer $((w1 - w0))" >&2
    echo "$((a1 - a0)) $((w1 - w0))" >>"$work/cpu"
    local dropped
    dropped=$("$BIN" trace status "$dev" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["dropped"])')
    echo "    traced: $(du -sh "$TRACE_DIR" | cut -f1) of trace files, $dropped dropped records since attach" >&2
  fi
  echo "$v"
}

fio_iops() {
  fio --name=mix --filename="$dev" --rw=randrw --rwmixread=70 --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=16 --size=1g --time_based --runtime="$FIO_SECONDS" \
    --randseed=1 --output-format=json |
    python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(round(j["read"]["iops"]+j["write"]["iops"]))'
}

# Alternate which side goes first.
alternate() {
  local name=$1
  shift
  local -n off=$1 on=$2
  shift 2
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then
      off+=("$(measured off "$@")")
      on+=("$(measured on "$@")")
    else
      on+=("$(measured on "$@")")
      off+=("$(measured off "$@")")
    fi
    echo "$name round $r: untraced ${off[-1]}, traced ${on[-1]} (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
  done
}

fio_off=() fio_on=() pg_off=() pg_on=()
echo "trace files in $TRACE_DIR ($(df --output=fstype "$TRACE_DIR" | tail -1))" >&2
[[ $PARTS != *fio* ]] || {
fio --name=fill --filename="$dev" --rw=write --bs=1m --direct=1 --ioengine=libaio \
  --iodepth=8 --size=1g --output-format=terse >/dev/null
alternate fio fio_off fio_on fio_iops
}
[[ $PARTS != *pgbench* ]] || {
pg_on "$dev"
pgbench_init "$PGSCALE"
alternate pgbench pg_off pg_on pgbench_tps "$CLIENTS" "$PG_SECONDS"
}

python3 - "${fio_off[*]}" "${fio_on[*]}" "${pg_off[*]}" "${pg_on[*]}" "$ROUNDS" "$(cat "$work/cpu")" <<'PY'
import statistics, sys
def row(name, unit, a, b):
    a = [float(x) for x in a.split()]
    b = [float(x) for x in b.split()]
    if not a:
        return
    ma, mb = statistics.median(a), statistics.median(b)
    r = mb / ma
    print(f"{name}: median {ma:.0f} {unit} untraced, {mb:.0f} traced; ratio {r:.3f} "
          f"({'meets' if r >= 0.95 else 'MISSES'} the >= 0.95 target)")
print(f"trace capture cost, {sys.argv[5]} alternating rounds, iodrive-duo-640-mlc ioDimm 0, timing model")
row("fio 4k randrw 70/30 QD16", "IOPS", sys.argv[1], sys.argv[2])
row("pgbench TPC-B", "TPS", sys.argv[3], sys.argv[4])
cpu = [tuple(map(int, l.split())) for l in sys.argv[6].splitlines() if l.strip()]
total, writer = sum(a for a, _ in cpu), sum(w for _, w in cpu)
print(f"trace writer thread: {writer} of the daemon's {total} CPU ticks over the traced rounds "
      f"({100 * writer / max(total, 1):.1f} %)")
PY
