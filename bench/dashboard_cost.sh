#!/usr/bin/env bash
# Cost of the live dashboard on a running simulation: simulated I/Os per
# wall second of `vsl run` (4K random writes, 16T/16Q, scale 0.05) alone
# (it still publishes its intervals), and with `vsl serve` running and headless Chromium showing the dashboard
# (refreshing every second), in alternating rounds of the same run. Prints
# every round and the ratio of the medians (target: with / without >= 0.97).
# NO_BUILD=1 uses target/release/vsl as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p vsl
VSL=$PWD/target/release/vsl
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-120s}
PORT=${PORT:-18931}
work=$(mktemp -d)
export OPENVSL_RUN_DIR=$work/run
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

one_run() {
  "$VSL" run --scale 0.05 --profile 4k-randwrite --threads 16 --qd 16 \
    --duration "$DURATION" --interval 1s --seed 1 2>/dev/null |
    grep -oP '\(\K[0-9.]+(?= M I/Os per wall second)'
}

without=()
with=()
with_browser() {
  "$VSL" serve --listen "127.0.0.1:$PORT" >"$work/serve.log" 2>&1 &
  local server=$!
  pids+=($server)
  sleep 1
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --remote-debugging-port=0 --user-data-dir="$work/chromium" \
    "http://127.0.0.1:$PORT/" >/dev/null 2>&1 &
  local browser=$!
  pids+=($browser)
  sleep 2
  with+=("$(one_run)")
  kill "$browser" "$server"
  wait "$browser" "$server" 2>/dev/null || true
}

# Alternate which goes first, so a drift in the machine's load does not
# favour one side.
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    without+=("$(one_run)")
    with_browser
  else
    with_browser
    without+=("$(one_run)")
  fi
  echo "round $r: without browser ${without[-1]} M I/Os/s, with browser ${with[-1]} M I/Os/s (load average $(cut -d" " -f1 /proc/loadavg))" >&2
done
python3 - "${without[*]}" "${with[*]}" <<'PY'
import statistics, sys
a = [float(x) for x in sys.argv[1].split()]
b = [float(x) for x in sys.argv[2].split()]
ma, mb = statistics.median(a), statistics.median(b)
print(f"dashboard cost: median {ma:.3f} M simulated I/Os per wall second without a browser, "
      f"{mb:.3f} M with vsl serve + headless Chromium on the dashboard; ratio {mb / ma:.3f} "
      f"({'meets' if mb / ma >= 0.97 else 'MISSES'} the >= 0.97 target)")
PY
