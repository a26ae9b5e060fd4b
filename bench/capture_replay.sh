#!/usr/bin/env bash
# Capture -> replay fidelity (issue 30): PostgreSQL pgbench on an attached
# card with `vsl attach --trace`, then `vsl replay` of the captured trace,
# timed, on the same preset, ioDimm, scale and format in virtual time. The
# replay's mean and p99 latency per op are compared with the attached
# card's for the same requests, two references:
#   trace  the capture's own completion - arrival of every request (from
#          trace.NNN.blkparse, Q and C events): what the daemon answered;
#   model  the daemon's histograms of the model's own latency (completion
#          - submission, `vsl status --json`: model_read/write_latency),
#          over the same requests (capture on from attach to the end).
# Prints each figure and the ratio replay / reference (target 0.85-1.15).
# The daemon answers each request ahead of the model's completion by the
# kernel path's round trip (`--path-cost probe`), so the trace's latencies
# are the model's less that lead: the model reference is the like-for-like
# one, the trace one shows the lead. See bench/RESULTS.md.
# Needs root, /dev/fuse, loop devices and PostgreSQL (scripts/setup.sh).
# Knobs: SCALE_CARD (0.02), PGSCALE (2), CLIENTS (4), PG_SECONDS (30),
# FORMAT (stock), NO_BUILD=1 (use target/release as is), KEEP=DIR (copy
# the trace files and JSON there), JSON_OUT (the figures as JSON).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p vsl -p blockdev
VSL=$PWD/target/release/vsl
DAEMON_CLI=$PWD/target/release/vsl-blockdev  # its status --json has the model histograms
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] || { echo "capture_replay.sh: PostgreSQL not installed (scripts/setup.sh)" >&2; exit 1; }
SCALE_CARD=${SCALE_CARD:-0.02}
PGSCALE=${PGSCALE:-2}
CLIENTS=${CLIENTS:-4}
PG_SECONDS=${PG_SECONDS:-30}
FORMAT=${FORMAT:-stock}
PORT=54332
work=$(mktemp -d /tmp/openvsl-capreplay.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run OPENVSL_STATE_DIR=$work/state
cleanup() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -m immediate stop >/dev/null 2>&1 || true
  umount "$work/mnt" 2>/dev/null || true
  "$VSL" detach --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/trace" "$work/mnt"
echo "uptime: $(uptime)" >&2

dev=$("$VSL" attach --store "$work/store" --device iodrive-duo-640-mlc --member 0 \
  --scale "$SCALE_CARD" --format "$FORMAT" --trace "$work/trace" | cut -f1)
echo "attached $dev (iodrive-duo-640-mlc ioDimm 0, --scale $SCALE_CARD, --format $FORMAT), tracing to $work/trace" >&2
mkfs.ext4 -q -F -E nodiscard "$dev"
mount "$dev" "$work/mnt"
mkdir "$work/mnt/pgdata" "$work/mnt/pglog"
chown postgres: "$work/mnt/pgdata" "$work/mnt/pglog"
runuser -u postgres -- "$PGBIN/initdb" -D "$work/mnt/pgdata" >/dev/null 2>&1
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -l "$work/mnt/pglog/server.log" \
  -o "-p $PORT -k $work/mnt/pglog -c listen_addresses=''" -w start >/dev/null
runuser -u postgres -- pgbench -h "$work/mnt/pglog" -p $PORT -i -q -s "$PGSCALE" postgres >/dev/null 2>&1
tps=$(cd "$work/mnt/pglog" && runuser -u postgres -- pgbench -h "$work/mnt/pglog" -p $PORT \
  -c "$CLIENTS" -j 2 -T "$PG_SECONDS" postgres 2>/dev/null | grep -oP 'tps = \K[0-9.]+' | head -1)
echo "pgbench -s $PGSCALE, $CLIENTS clients, ${PG_SECONDS}s: $tps TPS" >&2
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -w stop >/dev/null
for i in $(seq 20); do
  umount "$work/mnt" 2>/dev/null && break
  [ "$i" -lt 20 ] || { fuser -vm "$work/mnt" >&2 || true; umount "$work/mnt"; }
  sleep 0.5
done
# The daemon's histograms after the last request, then the capture closed.
"$DAEMON_CLI" status --json >"$work/status.json"
"$VSL" trace status "$dev" --json >"$work/trace_status.json"
"$VSL" trace stop "$dev" >/dev/null
"$VSL" detach "$dev" >/dev/null
ls -l "$work/trace" >&2
n_iolog=$(ls "$work/trace"/trace.*.iolog | wc -l)
[ "$n_iolog" -eq 1 ] || { echo "capture_replay.sh: the trace rotated into $n_iolog files; raise --trace-rotate" >&2; exit 1; }

echo "replaying $work/trace/trace.000.iolog timed (1x) in virtual time" >&2
"$VSL" replay "$work/trace/trace.000.iolog" --device iodrive-duo-640-mlc --member 0 \
  --scale "$SCALE_CARD" --format "$FORMAT" --qd 256 --json >"$work/replay.json"
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$work"/trace/trace.000.* "$work"/*.json "$KEEP"/
fi

python3 - "$work" "${JSON_OUT:-}" "$SCALE_CARD" "$FORMAT" "$PGSCALE" "$CLIENTS" "$PG_SECONDS" "$tps" <<'PY'
import json, math, sys
from collections import defaultdict, deque
work, json_out = sys.argv[1], sys.argv[2]

# Reference 1: completion - arrival of every request, from the blkparse
# text (Q then C; a C matches the oldest Q of the same op, sector, count).
pending = defaultdict(deque)
lat = defaultdict(list)
with open(f"{work}/trace/trace.000.blkparse") as f:
    for line in f:
        p = line.split()
        if len(p) < 8 or p[5] not in ("Q", "C"):
            continue
        t = float(p[3])
        op = {"R": "read", "W": "write", "D": "discard", "FN": "flush"}[p[6]]
        # A flush's Q has no sector, its C "0"; a request's "S + N".
        key = (op,) if op == "flush" else (op, p[7], p[9] if p[8] == "+" else "0")
        if p[5] == "Q":
            pending[key].append(t)
        else:
            lat[op].append((t - pending[key].popleft()) * 1e6)
unmatched = sum(len(q) for q in pending.values())

def stats(v):
    v = sorted(v)
    # The same rank as hdrhistogram's value_at_quantile: the smallest value
    # with at least q of the count at or below it.
    p99 = v[max(0, math.ceil(0.99 * len(v)) - 1)]
    return {"count": len(v), "mean_us": sum(v) / len(v), "p99_us": p99}

trace = {op: stats(v) for op, v in lat.items() if v}
st = json.load(open(f"{work}/status.json"))
m = st[0]["members"][0]
model = {"read": m["model_read_latency"], "write": m["model_write_latency"]}
wall = {"read": m["read_latency"], "write": m["write_latency"]}
rep = json.load(open(f"{work}/replay.json"))
run = rep["runs"][0]
replay = {o["op"]: {"count": o["ios"], "mean_us": o["lat"]["mean_us"], "p99_us": o["lat"]["p99_us"]}
          for o in run["by_op"]}
ts = json.load(open(f"{work}/trace_status.json"))
print(f"capture -> replay, iodrive-duo-640-mlc ioDimm 0, --scale {sys.argv[3]}, --format {sys.argv[4]}; "
      f"pgbench -s {sys.argv[5]}, {sys.argv[6]} clients, {sys.argv[7]} s, {sys.argv[8]} TPS")
print(f"trace: {run['trace']['records']} requests, {ts.get('dropped')} dropped, {unmatched} Q without C; "
      f"replay {run['issued']} issued, {run['waited']} waited in the host queue")
out = {"trace": trace, "model": model, "daemon_wall": wall, "replay": replay, "rows": []}
print(f"{'op':<7}{'figure':<9}{'replay':>10}{'model':>10}{'ratio':>8}{'trace':>10}{'ratio':>8}  counts replay/model/trace")
ok = True
for op in ("read", "write"):
    if op not in replay:
        continue
    for fig in ("mean_us", "p99_us"):
        r, mo, tr = replay[op][fig], model[op][fig], trace.get(op, {}).get(fig, float("nan"))
        rm, rt = r / mo if mo else float("nan"), r / tr if tr else float("nan")
        ok &= 0.85 <= rm <= 1.15
        out["rows"].append({"op": op, "figure": fig, "replay": r, "model": mo, "ratio_model": rm,
                            "trace": tr, "ratio_trace": rt})
        print(f"{op:<7}{fig[:-3]:<9}{r:>10.1f}{mo:>10.1f}{rm:>8.3f}{tr:>10.1f}{rt:>8.3f}  "
              f"{replay[op]['count']}/{model[op]['count']}/{trace.get(op, {}).get('count', 0)}")
for op in ("flush", "discard"):
    if op in replay or op in trace:
        print(f"{op:<8}replay {replay.get(op, {}).get('count', 0)} I/Os mean "
              f"{replay.get(op, {}).get('mean_us', 0):.1f} us; trace {trace.get(op, {}).get('count', 0)} "
              f"mean {trace.get(op, {}).get('mean_us', 0):.1f} us ")
late, svc = m["emulator_late"], m["service_latency"]
print(f"daemon: answers late of the model's time (less its lead) by mean {late['mean_us']:.1f} us, "
      f"p99 {late['p99_us']:.1f} us; its own work per I/O mean {svc['mean_us']:.1f} us; "
      f"flush (store sync) mean {m['flush_latency']['mean_us']:.1f} us")
out["daemon_late"], out["daemon_service"] = late, svc
print(f"replay vs model, mean and p99 per op: {'all within' if ok else 'NOT all within'} 15 %")
if json_out:
    json.dump(out, open(json_out, "w"), indent=1)
PY
