#!/usr/bin/env bash
# Capture -> replay fidelity (issue 30): PostgreSQL pgbench on an attached
# card with `vsl attach --trace`, then `vsl replay` of the captured trace,
# timed, on the same preset, ioDimm, scale and format in virtual time. The
# replay's mean and p99 latency per op are compared with three views of
# the same requests on the attached card:
#   block   what the I/O saw at the loop device: the kernel's
#           block_rq_issue -> block_rq_complete of every request
#           (tracefs; blktrace's D and C), the whole path through the
#           loop driver, FUSE and the daemon;
#   daemon  the capture's own completion - arrival of every request (from
#           trace.NNN.blkparse, Q and C events): receipt of the FUSE
#           request to the daemon's answer (the daemon's per-request
#           latency);
#   model   the daemon's histograms of the model's own latency (completion
#           - submission, `vsl-blockdev status --json`).
# The daemon answers each request ahead of the model's completion by the
# kernel path's round trip (`--path-cost probe`), so that the block layer
# sees the model's latency: the daemon's view is the model's less that
# lead, plus how late the daemon was. The script prints the daemon's
# split of its wall time (before the model, the model, the lead, late),
# and the FUSE ring threads' lateness split into the time they waited for
# their wake-up and the time they worked after it. DAEMON_RT=N (an
# experiment, like DAEMON_NICE): `chrt -f N` on the ring threads from here.
# With ATTACH_OPTS="--path-cost none" the daemon answers at the model's
# completion (no lead): its view is then the model's plus its lateness.
# So that reads reach the card, the database is larger than PostgreSQL's
# buffers (PGSCALE 10: 150 MB against shared_buffers 16 MB) and the
# filesystem is mounted afresh between pgbench -i and the run (the
# client's page cache of it is gone; the store's is untouched).
# Needs root, /dev/fuse, loop devices and PostgreSQL (scripts/setup.sh).
# Knobs: SCALE_CARD (0.02), PGSCALE (10), SHARED_BUFFERS (16MB), CLIENTS
# (4), PG_SECONDS (30), FORMAT (stock), NO_BUILD=1 (use target/release as
# is), KEEP=DIR (copy the trace files and JSON there), JSON_OUT (the
# figures as JSON), ATTACH_OPTS (more `vsl attach` options).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p vsl -p blockdev
VSL=$PWD/target/release/vsl
DAEMON_CLI=$PWD/target/release/vsl-blockdev  # its status --json has the model histograms
SCALE_CARD=${SCALE_CARD:-0.02}
PGSCALE=${PGSCALE:-10}
SHARED_BUFFERS=${SHARED_BUFFERS:-16MB}
CLIENTS=${CLIENTS:-4}
PG_SECONDS=${PG_SECONDS:-30}
FORMAT=${FORMAT:-stock}
PORT=54332
work=$(mktemp -d /tmp/openvsl-capreplay.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run OPENVSL_STATE_DIR=$work/state
. bench/lib/pg_attached.sh
cleanup() {
  blk_trace_stop
  pg_cleanup
  "$VSL" detach --all >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/trace"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
t_start=$(date -u +%H:%M)

# shellcheck disable=SC2086
dev=$("$VSL" attach --store "$work/store" --device iodrive-duo-640-mlc --member 0 \
  --scale "$SCALE_CARD" --format "$FORMAT" --trace "$work/trace" ${ATTACH_OPTS:-} | cut -f1)
echo "attached $dev (iodrive-duo-640-mlc ioDimm 0, --scale $SCALE_CARD, --format $FORMAT), tracing to $work/trace" >&2
if [ -n "${DAEMON_NICE:-}" ]; then
  # An experiment: every thread of the daemon at this nice value.
  daemon=$(python3 -c 'import json,glob; print(json.load(open(glob.glob("'"$work"'/run/*/state.json")[0]))["pid"])')
  for t in /proc/"$daemon"/task/*; do renice -n "$DAEMON_NICE" -p "${t##*/}" >/dev/null; done
  echo "the daemon's threads at nice $DAEMON_NICE" >&2
fi
if [ -n "${DAEMON_RT:-}" ]; then
  # An experiment: the FUSE ring threads (fuse-uring-N) SCHED_FIFO at this priority.
  daemon=$(python3 -c 'import json,glob; print(json.load(open(glob.glob("'"$work"'/run/*/state.json")[0]))["pid"])')
  for t in /proc/"$daemon"/task/*; do
    case $(cat "$t/comm") in fuse-uring-*) chrt -f -p "$DAEMON_RT" "${t##*/}" ;; esac
  done
  echo "the daemon's FUSE ring threads SCHED_FIFO $DAEMON_RT" >&2
fi
cp "/sys/block/$(basename "$dev")/stat" "$work/diskstat.0"
block=none
fuse_mnt=$(python3 -c 'import json,glob; print(json.load(open(glob.glob("'"$work"'/run/*/state.json")[0]))["mountpoint"])')
blk_trace_start "$dev" "$work/block.trace" "$fuse_mnt" && block=$work/block.trace
pg_on "$dev" -c shared_buffers="$SHARED_BUFFERS"
pgbench_init "$PGSCALE"
# The client's cached pages of the database go with the mount.
pg_stop
unmount_mnt
mount "$dev" "$work/mnt"
pg_start -c shared_buffers="$SHARED_BUFFERS"
tps=$(pgbench_tps "$CLIENTS" "$PG_SECONDS")
echo "pgbench -s $PGSCALE (shared_buffers $SHARED_BUFFERS), $CLIENTS clients, ${PG_SECONDS}s: $tps TPS" >&2
pg_stop
unmount_mnt
blk_trace_stop
cp "/sys/block/$(basename "$dev")/stat" "$work/diskstat.1"
# The daemon's histograms after the last request, then the capture closed.
"$DAEMON_CLI" status --json >"$work/status.json"
"$VSL" trace status "$dev" --json >"$work/trace_status.json"
"$VSL" trace stop "$dev" >/dev/null
"$VSL" detach "$dev" >/dev/null
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
echo "load after: $load_after" >&2
ls -l "$work/trace" >&2
n_iolog=$(ls "$work/trace"/trace.*.iolog | wc -l)
[ "$n_iolog" -eq 1 ] || { echo "capture_replay.sh: the trace rotated into $n_iolog files; raise --trace-rotate" >&2; exit 1; }

echo "replaying $work/trace/trace.000.iolog timed (1x) in virtual time" >&2
"$VSL" replay "$work/trace/trace.000.iolog" --device iodrive-duo-640-mlc --member 0 \
  --scale "$SCALE_CARD" --format "$FORMAT" --qd 256 --json >"$work/replay.json"
if [ -n "${KEEP:-}" ]; then
  mkdir -p "$KEEP"
  cp "$work"/trace/trace.000.* "$work"/*.json "$KEEP"/
  [ "$block" = none ] || cp "$block" "$KEEP"/
fi

setup="iodrive-duo-640-mlc ioDimm 0, --scale $SCALE_CARD, --format $FORMAT; pgbench -s $PGSCALE, \
shared_buffers $SHARED_BUFFERS, $CLIENTS clients, $PG_SECONDS s"
python3 - "$work" "${JSON_OUT:-}" "$block" "$tps" "$t_start" "$load_after" "$setup" <<'PY'
import json, math, re, sys
from collections import defaultdict, deque
work, json_out, block_file, tps, t_start, load_after, setup = sys.argv[1:8]

def stats(v):
    v = sorted(v)
    # The same rank as hdrhistogram's value_at_quantile: the smallest value
    # with at least q of the count at or below it.
    p99 = v[max(0, math.ceil(0.99 * len(v)) - 1)]
    return {"count": len(v), "mean_us": sum(v) / len(v), "p99_us": p99}

def matched(events):
    """Latencies by op from (time s, start?, op, key) events: an end
    matches the oldest start of the same key; also the starts left open."""
    pending, lat = defaultdict(deque), defaultdict(list)
    for t, start, op, key in events:
        if start:
            pending[key].append(t)
        elif pending[key]:
            lat[op].append((t - pending[key].popleft()) * 1e6)
    return {op: stats(v) for op, v in lat.items() if v}, sum(len(q) for q in pending.values())

# The daemon's view: the capture's blkparse text (Q then C; a flush's Q has
# no sector, its C "0"; a request's "S + N").
def daemon_events():
    with open(f"{work}/trace/trace.000.blkparse") as f:
        for line in f:
            p = line.split()
            if len(p) < 8 or p[5] not in ("Q", "C"):
                continue
            op = {"R": "read", "W": "write", "D": "discard", "FN": "flush"}[p[6]]
            key = (op,) if op == "flush" else (op, p[7], p[9] if p[8] == "+" else "0")
            yield float(p[3]), p[5] == "Q", op, key
daemon, daemon_open = matched(daemon_events())

# The block layer's view: block_rq_issue / block_rq_complete of the loop
# device, matched by rwbs, sector and sectors.
ev = re.compile(r"\s([\d.]+):\s+block_rq_(issue|complete):\s+\d+,\d+\s+(\S+)\s.*?\)\s+(\d+)\s+\+\s+(\d+)")
def block_events():
    with open(block_file) as f:
        for line in f:
            m = ev.search(line)
            if not m:
                continue
            t, kind, rwbs, sector, n = m.groups()
            op = ("discard" if "D" in rwbs else "read" if "R" in rwbs else
                  "write" if "W" in rwbs else "flush" if "F" in rwbs else "other")
            # A flush's issue says sector 0, its completion -1.
            key = (rwbs,) if op == "flush" else (rwbs, sector, n)
            yield float(t), kind == "issue", op, key
block, block_open = matched(block_events()) if block_file != "none" else ({}, 0)

# The FUSE round trip (the kernel's fuse_request_send -> fuse_request_end
# of the daemon's connection): the daemon's view plus its pickup of the
# request and the delivery of its answer.
fev = re.compile(r"\s([\d.]+):\s+fuse_request_(send|end):\s+connection \d+ req (\d+)(?: opcode \d+ \((\w+)\))?")
def fuse_events():
    ops = {}
    with open(block_file) as f:
        for line in f:
            m = fev.search(line)
            if not m:
                continue
            t, kind, req, opcode = m.groups()
            if kind == "send":
                ops[req] = {"FUSE_READ": "read", "FUSE_WRITE": "write", "FUSE_FSYNC": "flush",
                            "FUSE_FALLOCATE": "discard"}.get(opcode, "other")
            op = ops.get(req, "other")
            yield float(t), kind == "send", op, (req,)
fuse, fuse_open = matched(fuse_events()) if block_file != "none" else ({}, 0)

# The loop device's counters run from its creation: the difference over
# the attachment.
d0, d1 = ([int(x) for x in open(f"{work}/diskstat.{w}").read().split()] for w in ("0", "1"))
diskstat = {"read": (d1[0] - d0[0], d1[3] - d0[3]), "write": (d1[4] - d0[4], d1[7] - d0[7])}
st = json.load(open(f"{work}/status.json"))
m = st[0]["members"][0]
model = {"read": m["model_read_latency"], "write": m["model_write_latency"]}
rep = json.load(open(f"{work}/replay.json"))
run = rep["runs"][0]
replay = {o["op"]: {"count": o["ios"], "mean_us": o["lat"]["mean_us"], "p99_us": o["lat"]["p99_us"]}
          for o in run["by_op"]}
ts = json.load(open(f"{work}/trace_status.json"))
print(f"capture -> replay, {setup}: {tps} TPS; started {t_start} UTC, load after {load_after}")
print(f"trace: {run['trace']['records']} requests, {ts.get('dropped')} dropped, {daemon_open} Q without C; "
      f"block layer: {sum(v['count'] for v in block.values())} requests, {block_open} issued without completion; "
      f"replay {run['issued']} issued, {run['waited']} waited in the host queue")
out = {"setup": setup, "tps": float(tps or 0), "load_after": load_after, "block": block,
       "daemon": daemon, "model": model, "replay": replay, "split": m.get("wall_split"), "rows": []}
out["fuse"] = fuse
print(f"{'op':<7}{'figure':<7}{'replay':>9}{'block':>9}{'ratio':>7}{'daemon':>9}{'ratio':>7}"
      f"{'model':>9}{'ratio':>7}  counts replay/block/daemon/model")
for op in ("read", "write"):
    if op not in replay:
        continue
    for fig in ("mean_us", "p99_us"):
        r = replay[op][fig]
        refs = [block.get(op, {}).get(fig, math.nan), daemon.get(op, {}).get(fig, math.nan), model[op][fig]]
        ratios = [r / x if x else math.nan for x in refs]
        out["rows"].append({"op": op, "figure": fig, "replay": r, "block": refs[0], "daemon": refs[1],
                            "model": refs[2], "ratio_block": ratios[0], "ratio_daemon": ratios[1],
                            "ratio_model": ratios[2]})
        cells = "".join(f"{x:>9.1f}{q:>7.3f}" for x, q in zip(refs, ratios))
        print(f"{op:<7}{fig[:-3]:<7}{r:>9.1f}{cells}  {replay[op]['count']}/"
              f"{block.get(op, {}).get('count', 0)}/{daemon.get(op, {}).get('count', 0)}/{model[op]['count']}")
if fuse:
    print("where the block layer's time goes, means (us): block = loop path + FUSE round trip; "
          "FUSE round trip = the daemon's pickup and answer delivery + the daemon's wall time")
    for op in ("read", "write", "flush"):
        b, f, d = block.get(op), fuse.get(op), daemon.get(op)
        if b and f and d:
            print(f"  {op:<6} block {b['mean_us']:8.1f} = loop {b['mean_us'] - f['mean_us']:8.1f} + FUSE {f['mean_us']:8.1f}"
                  f" = loop + (pickup/delivery {f['mean_us'] - d['mean_us']:8.1f} + daemon {d['mean_us']:8.1f})"
                  f"   [block {b['count']}, FUSE {f['count']}, daemon {d['count']}]")
for op, (n, ms) in diskstat.items():
    if n:
        print(f"{op}: the loop device's own counters (/sys/block/*/stat) give {n} requests, mean {1e3 * ms / n:.1f} us")
for op in ("flush", "discard"):
    if op in replay or op in daemon:
        print(f"{op:<8}replay {replay.get(op, {}).get('count', 0)} mean {replay.get(op, {}).get('mean_us', 0):.1f} us; "
              f"block {block.get(op, {}).get('count', 0)} mean {block.get(op, {}).get('mean_us', 0):.1f} us; "
              f"daemon {daemon.get(op, {}).get('count', 0)} mean {daemon.get(op, {}).get('mean_us', 0):.1f} us")
sp = m.get("wall_split")
if sp:
    print("the daemon's wall time, receipt to answer = before the model + model - lead + late (means, us):")
    for op in ("read", "write"):
        s = sp[op]
        print(f"  {op:<6}{s['wall_us']:8.1f} = {s['before_model_us']:6.1f} (p99 {s['before_model_p99_us']:.0f})"
              f" + {s['model_us']:7.1f} - {s['lead_us']:5.1f} + {s['late_us']:6.1f} (p99 {s['late_p99_us']:.0f})"
              f"   [{s['count']} I/Os]; late at the engine's return {s['late_at_return_us']:.1f}, "
              f"the engine's own time after submission {s['engine_us']:.1f} (p99 {s['engine_p99_us']:.0f})")
fe = st[0].get("fuse_entries")
if fe:
    print(f"FUSE ring entries: at most {fe['most_in_use']} of {fe['per_queue']} of a queue held a request; "
          f"{fe['all_in_use']} requests were taken with all of their queue's entries busy")
    if fe.get("answers"):
        print(f"FUSE ring threads' answers at their time: {fe['answers']}, late while waiting "
              f"{fe['late_waiting_mean_us']:.1f} us + while working {fe['late_working_mean_us']:.1f} us (means); "
              f"over 100 us late: {fe['late_100us_waiting']} mostly waiting, {fe['late_100us_working']} mostly working")
late, svc = m["emulator_late"], m["service_latency"]
print(f"daemon: late mean {late['mean_us']:.1f} us, p99 {late['p99_us']:.1f} us; its own work per I/O "
      f"mean {svc['mean_us']:.1f} us; flush (store sync) mean {m['flush_latency']['mean_us']:.1f} us; "
      f"reads' trimmed extra lead {m.get('lead_trim_read_us', 0):.1f} us")
if json_out:
    json.dump(out, open(json_out, "w"), indent=1)
PY
