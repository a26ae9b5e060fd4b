#!/usr/bin/env bash
# Trace replay speed and memory (issue 30): `vsl replay` of a generated fio
# iolog v3 (4 KiB, 70 % random reads / 30 % writes, 10 µs apart on
# average) on a scaled card, as fast as possible at QD 32 and timed.
# Prints trace records replayed per wall second next to two baselines
# measured in the same run on the same file: merely reading and parsing the
# trace (`vsl replay --parse-only`: no card simulated) and `wc -l`. Then the
# peak RSS (/usr/bin/time -v) of replaying a small and a large trace
# (BIG_MB, default 2000, generated in /var/tmp and deleted afterwards): bounded
# memory means the two are close. The replay is single-threaded (one core).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${NO_BUILD:-}" ] || cargo build --release -q -p vsl
VSL=$PWD/target/release/vsl
N=${N:-5000000}
BIG_MB=${BIG_MB:-2000}
DEVICE=${DEVICE:-iodrive-duo-640-mlc}
SCALE=${SCALE:-0.01}
TMP=${TMPDIR_BIG:-/var/tmp}
small=$(mktemp "$TMP/replay-small.XXXXXX.log")
big=$(mktemp "$TMP/replay-big.XXXXXX.log")
trap 'rm -f "$small" "$big"' EXIT
card=(--device "$DEVICE" --scale "$SCALE")

# gen N SPAN: an iolog v3 of N requests over SPAN bytes (deterministic).
gen() {
  awk -v n="$1" -v span="$2" 'BEGIN {
    srand(1); print "fio version 3 iolog"; print "0 /dev/x add"; t = 0
    for (i = 0; i < n; i++) {
      t += 1 + int(rand() * 19)
      op = (rand() < 0.7) ? "read" : "write"
      printf "%d /dev/x %s %.0f 4096\n", t, op, int(rand() * span / 4096) * 4096
    }
  }'
}
echo "load before: $(uptime)"
gen "$N" 6000000000 >"$small"
echo "trace: $N records, $(du -h "$small" | cut -f1) ($small)"

t0=$(date +%s.%N); wc -l <"$small" >/dev/null; t1=$(date +%s.%N)
wc_s=$(echo "$t1 - $t0" | bc -l)

run() { # run NAME ARGS...: vsl replay under /usr/bin/time; prints "wall_s rss_kB cpu_s"
  local name=$1; shift
  /usr/bin/time -v "$VSL" replay "$@" -q --json >"$TMP/replay-$name.json" 2>"$TMP/replay-$name.time"
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + p[i]}
    /Maximum resident set size/ {rss = $2} /User time/ {u = $2} /System time/ {s = $2}
    END {print w, rss, u + s}' "$TMP/replay-$name.time"
}
read -r parse_s parse_rss parse_cpu < <(run parse "$small" "${card[@]}" --afap --parse-only)
read -r afap_s afap_rss afap_cpu < <(run afap "$small" "${card[@]}" --afap --qd 32)
read -r timed_s timed_rss timed_cpu < <(run timed "$small" "${card[@]}" --qd 32)

python3 - "$N" "$wc_s" "$parse_s $parse_cpu" "$afap_s $afap_cpu" "$timed_s $timed_cpu" "$TMP/replay-afap.json" "$TMP/replay-timed.json" <<'PY'
import json, sys
n = int(sys.argv[1]); wc_s = float(sys.argv[2])
parse = [float(x) for x in sys.argv[3].split()]
afap_t = [float(x) for x in sys.argv[4].split()]; timed_t = [float(x) for x in sys.argv[5].split()]
afap = json.load(open(sys.argv[6]))["runs"][0]; timed = json.load(open(sys.argv[7]))["runs"][0]
assert afap["issued"] == n and timed["issued"] == n, "every record replayed"
print(f"baseline wc -l:                {n / wc_s / 1e6:6.2f} M lines per wall second")
print(f"baseline parse only (no card): {n / parse[0] / 1e6:6.2f} M records per wall second, {n / parse[1] / 1e6:6.2f} M per CPU second")
for name, (w, c), r in (("afap QD 32", afap_t, afap), ("timed 1x QD 32", timed_t, timed)):
    t = r["summary"]
    rd = [o for o in r["by_op"] if o["op"] == "read"][0]
    print(f"replay {name:<15}         {n / w / 1e6:6.2f} M records per wall second, {n / c / 1e6:6.2f} M per CPU second "
          f"(process: {w:.2f} s wall, {c:.2f} s CPU; {t['virtual_s']:.2f} s virtual, {t['iops']:.0f} IOPS, read p99 {rd['lat']['p99_us']:.1f} us); "
          f"CPU-time ratio to parse only {parse[1] / c:.3f}")
PY
rm -f "$TMP"/replay-afap.json "$TMP"/replay-timed.json "$TMP"/replay-parse.json "$TMP"/replay-*.time

big_n=$(( BIG_MB * 1000000 / 37 ))
gen "$big_n" 6000000000 >"$big"
big_size=$(du -h "$big" | cut -f1)
read -r big_s big_rss big_cpu < <(run big "$big" "${card[@]}" --afap --qd 32)
rm -f "$TMP"/replay-big.json "$TMP"/replay-big.time
echo "peak RSS: small trace ($(du -h "$small" | cut -f1), $N records) afap ${afap_rss} kB, timed ${timed_rss} kB;" \
  "large trace ($big_size, $big_n records) ${big_rss} kB, replayed in ${big_s} s wall, ${big_cpu} s CPU ($(echo "$big_n / $big_cpu / 1000000" | bc -l | cut -c1-5) M records per CPU second)"
echo "load after: $(uptime)"
