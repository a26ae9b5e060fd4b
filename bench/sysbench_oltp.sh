#!/usr/bin/env bash
# Application level (issue 12): sysbench OLTP (oltp_read_write) against
# MariaDB (Debian's mariadb-server) on the attached card, 2 to 32 threads,
# stock vs high-performance (hp) format. Reports TPS, average and
# 99th-percentile transaction latency per format and thread count.
#
# Each format: a fresh card (iodrive-duo-640-mlc ioDimm 0 at --scale),
# preconditioned to steady state as bench/pgbench.sh does (whole device
# written sequentially, then one capacity of random 4 KiB writes, at
# --timing none), re-attached with model timing, ext4 without discard,
# mariadb-install-db and mariadbd with the data directory on the card
# (InnoDB, O_DIRECT, flush at every commit), sysbench prepare, then one run
# per thread count (after a discarded warm-up run). Results are written to --out after
# every run (a failed run keeps the finished ones). Needs root, /dev/fuse,
# loop devices, fio, sysbench and MariaDB (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: bench/sysbench_oltp.sh [options]
  --threads LIST      thread counts (default "2 4 8 16 32")
  --formats LIST      formats (default "stock hp")
  --seconds N         seconds per thread count (default 30)
  --warmup N          warm-up seconds before each run (default 5)
  --tables N          sysbench tables (default 8)
  --table-size N      rows per table (default 100000)
  --scale X           --scale of the card (default 0.01)
  --no-precondition   skip the steady-state preconditioning (fresh card)
  --port N            MariaDB TCP port on 127.0.0.1 (default 33071)
  --out FILE          results JSON (default bench/out/sysbench_oltp.json)
Environment: MARIADBD (server binary), NO_BUILD=1.
EOF
}
die() { echo "sysbench_oltp: $*" >&2; exit 1; }

THREADS="2 4 8 16 32"
FORMATS="stock hp"
SECONDS_RUN=30
WARMUP=5
TABLES=8
TABLE_SIZE=100000
SCALE_CARD=0.01
PRECONDITION=1
PORT=33071
OUT=bench/out/sysbench_oltp.json
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS=${2:?}; shift 2 ;;
    --formats) FORMATS=${2:?}; shift 2 ;;
    --seconds) SECONDS_RUN=${2:?}; shift 2 ;;
    --warmup) WARMUP=${2:?}; shift 2 ;;
    --tables) TABLES=${2:?}; shift 2 ;;
    --table-size) TABLE_SIZE=${2:?}; shift 2 ;;
    --scale) SCALE_CARD=${2:?}; shift 2 ;;
    --no-precondition) PRECONDITION=0; shift ;;
    --port) PORT=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
for n in $THREADS "$SECONDS_RUN" "$WARMUP" "$TABLES" "$TABLE_SIZE" "$PORT"; do
  [[ $n =~ ^[0-9]+$ ]] || die "'$n' is not a non-negative integer"
done
for f in $FORMATS; do
  case "$f" in stock|hp|improved-write|max-write) ;; *) die "--formats: unknown format '$f' (stock, hp, improved-write, max-write)" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (vsl attach, mount)"
MARIADBD=${MARIADBD:-/usr/sbin/mariadbd}
[ -x "$MARIADBD" ] || die "MariaDB server not found (MARIADBD='$MARIADBD'; run scripts/setup.sh)"
command -v mariadb-install-db >/dev/null || die "mariadb-install-db not found (run scripts/setup.sh)"
command -v sysbench >/dev/null || die "sysbench not found (run scripts/setup.sh)"
command -v fio >/dev/null || die "fio not found (run scripts/setup.sh)"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p blockdev
BIN=$(realpath "$CARGO_TARGET_DIR/release/vsl-blockdev" 2>/dev/null) || die "vsl-blockdev not built ($CARGO_TARGET_DIR/release)"

mkdir -p "$(dirname "$OUT")"
OUT=$(realpath "$OUT")
work=$(mktemp -d /tmp/openvsl-oltp.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run
mnt=$work/mnt
sock=$work/sock/mysqld.sock
mkdir "$work/sock"
chown mysql: "$work/sock"
server=
stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
  fi
}
cleanup() {
  stop_server
  umount "$mnt" 2>/dev/null || true
  [ -n "${store:-}" ] && "$BIN" detach "$store" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

card_counter() {
  "$BIN" status "$store" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
devs = d["devices"] if isinstance(d, dict) else [m for c in d for m in c["members"]]
print(devs[0]["lifetime"][sys.argv[1]])' "$1"
}

rows_file=$work/rows.jsonl
: >"$rows_file"
write_json() { # status
  python3 - "$OUT" "$rows_file" "$1" <<PY
import json, sys
out, rows, status = sys.argv[1:4]
json.dump({"tool": "sysbench-oltp", "test": "oltp_read_write", "card": "iodrive-duo-640-mlc ioDimm 0",
           "card_scale": $SCALE_CARD, "timing": "model", "preconditioned": bool($PRECONDITION),
           "tables": $TABLES, "table_size": $TABLE_SIZE, "seconds": $SECONDS_RUN, "warmup_seconds": $WARMUP,
           "mariadb": "$("$MARIADBD" --version | awk '{print $3}')",
           "status": status, "results": [json.loads(l) for l in open(rows) if l.strip()]},
          open(out, "w"), indent=2)
PY
}
write_json running

SB=(sysbench oltp_read_write --db-driver=mysql --mysql-socket="$sock" --mysql-user=root
  --mysql-db=sbtest --tables="$TABLES" --table-size="$TABLE_SIZE")
echo "sysbench_oltp: oltp_read_write, $TABLES tables x $TABLE_SIZE rows, threads: $THREADS, ${SECONDS_RUN}s each; formats: $FORMATS; card --scale $SCALE_CARD; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
t_start=$(date +%s)
for format in $FORMATS; do
  store=$work/store-$format
  if [ "$PRECONDITION" = 1 ]; then
    dev=$("$BIN" attach --store "$store" --device iodrive-duo-640-mlc --member 0 \
      --scale "$SCALE_CARD" --format "$format" --timing none | cut -f1)
    echo "[$format] preconditioning $dev (sequential fill, one capacity of random 4K writes)" >&2
    fio --name=seq --filename="$dev" --rw=write --bs=1m --direct=1 --ioengine=libaio --iodepth=16 \
      --size=100% --output-format=terse >/dev/null
    fio --name=rnd --filename="$dev" --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32 \
      --numjobs=2 --offset_increment=50% --size=50% --output-format=terse >/dev/null
    "$BIN" detach "$store" >/dev/null
    dev=$("$BIN" attach --store "$store" | cut -f1)
  else
    dev=$("$BIN" attach --store "$store" --device iodrive-duo-640-mlc --member 0 \
      --scale "$SCALE_CARD" --format "$format" | cut -f1)
  fi
  capacity=$(blockdev --getsize64 "$dev")
  echo "[$format] $((capacity / 1000000)) MB; ext4, MariaDB (timing model)" >&2
  mkfs.ext4 -q -F -E nodiscard "$dev"
  mkdir -p "$mnt"
  mount "$dev" "$mnt"
  mkdir "$mnt/mysql"
  chown mysql: "$mnt/mysql"
  mariadb-install-db --user=mysql --datadir="$mnt/mysql" --auth-root-authentication-method=socket \
    --skip-test-db >"$work/install.log" 2>&1 ||
    die "mariadb-install-db failed on the card ($format): $(grep -m1 -iE 'error' "$work/install.log" || tail -1 "$work/install.log")"
  "$MARIADBD" --no-defaults --user=mysql --datadir="$mnt/mysql" --socket="$sock" --port="$PORT" \
    --bind-address=127.0.0.1 --pid-file="$work/sock/mysqld.pid" --log-error="$work/mysqld.err" \
    --max-connections=200 --innodb-buffer-pool-size=256M --innodb-log-file-size=256M \
    --innodb-flush-method=O_DIRECT --innodb-flush-log-at-trx-commit=1 >>"$work/mysqld.err" 2>&1 &
  server=$!
  up=0
  for _ in $(seq 1 120); do
    if ! kill -0 "$server" 2>/dev/null; then break; fi
    if mariadb-admin --socket="$sock" -uroot ping >/dev/null 2>&1; then up=1; break; fi
    sleep 0.5
  done
  if [ "$up" = 0 ]; then
    reason=$(grep -m1 -E '\[ERROR\]' "$work/mysqld.err" 2>/dev/null | sed 's/^.*\[ERROR\] *//')
    stop_server
    write_json "failed: MariaDB did not start ($format)"
    die "MariaDB failed to start on port $PORT ($format): ${reason:-no answer in 60 s}; finished results kept in $OUT"
  fi
  mariadb --socket="$sock" -uroot -e "CREATE DATABASE sbtest"
  echo "[$format] sysbench prepare" >&2
  "${SB[@]}" --threads=4 prepare >"$work/prepare.log" 2>&1 ||
    die "sysbench prepare failed ($format): $(grep -m1 -iE 'fatal|error' "$work/prepare.log" || tail -1 "$work/prepare.log")"
  for t in $THREADS; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    bh=$(card_counter host_bytes_written)
    bn=$(card_counter nand_bytes_programmed)
    # sysbench 1.0 has no --warmup-time: a discarded run of WARMUP seconds.
    if [ "$WARMUP" -gt 0 ]; then
      "${SB[@]}" --threads="$t" --time="$WARMUP" run >"$work/warmup.log" 2>&1 ||
        die "sysbench warm-up failed ($format, $t threads): $(grep -m1 -iE 'fatal|error' "$work/warmup.log" || tail -1 "$work/warmup.log")"
    fi
    "${SB[@]}" --threads="$t" --time="$SECONDS_RUN" --percentile=99 \
      --report-interval=0 run >"$work/run.log" 2>&1 ||
      { write_json "failed: sysbench run ($format, $t threads)"
        die "sysbench run failed ($format, $t threads): $(grep -m1 -iE 'fatal|error' "$work/run.log" || tail -1 "$work/run.log")"; }
    ah=$(card_counter host_bytes_written)
    an=$(card_counter nand_bytes_programmed)
    python3 - "$work/run.log" "$format" "$t" "$load" "$bh" "$ah" "$bn" "$an" "$capacity" >>"$rows_file" <<'PY'
import json, re, sys
log, fmt, t, load, bh, ah, bn, an, cap = sys.argv[1:10]
text = open(log).read()
def num(pat):
    m = re.search(pat, text)
    if not m:
        sys.exit(f"sysbench_oltp: cannot find '{pat}' in the sysbench output")
    return float(m.group(1))
host, nand = int(ah) - int(bh), int(an) - int(bn)
print(json.dumps({
    "format": fmt, "threads": int(t),
    "tps": num(r"transactions:\s+\d+\s+\(([\d.]+) per sec"),
    "qps": num(r"queries:\s+\d+\s+\(([\d.]+) per sec"),
    "latency_avg_ms": num(r"avg:\s+([\d.]+)"),
    "latency_p99_ms": num(r"99th percentile:\s+([\d.]+)"),
    "latency_max_ms": num(r"max:\s+([\d.]+)"),
    "errors": int(num(r"errors:\s+(\d+)")),
    "capacity_bytes": int(cap), "host_bytes_written": host, "nand_bytes_programmed": nand,
    "write_amplification": round(nand / host, 2) if host else None,
    "load_avg_1m": float(load)}))
PY
    write_json running
    tail -1 "$rows_file" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("[%s] %2d threads: %8.1f TPS, avg %.2f ms, p99 %.2f ms, WA %s (load %s)" % (r["format"], r["threads"], r["tps"], r["latency_avg_ms"], r["latency_p99_ms"], r["write_amplification"], r["load_avg_1m"]))' >&2
  done
  stop_server
  umount "$mnt"
  "$BIN" detach "$store" >/dev/null
  rm -rf "$store"
done
write_json complete
echo "sysbench_oltp: done in $(( $(date +%s) - t_start )) s; results: $OUT" >&2
python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'format':<8} {'threads':>7} {'TPS':>9} {'avg ms':>8} {'p99 ms':>8} {'WA':>5}")
for r in d["results"]:
    print(f"{r['format']:<8} {r['threads']:>7} {r['tps']:>9.1f} {r['latency_avg_ms']:>8.2f} {r['latency_p99_ms']:>8.2f} {r['write_amplification'] or 0:>5}")
PY
