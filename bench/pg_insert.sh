#!/usr/bin/env bash
# Application level (issue 12): the insert-heavy database test of the
# reviews on PostgreSQL on the attached card. N connections insert rows
# keyed by random UUIDs (gen_random_uuid()) into a table with a btree
# primary key, 1000 rows per transaction, the table hash-partitioned into P
# partitions, partition i (heap and its primary-key index) in its own
# tablespace (the analogue of SQL Server's data files), on the stock,
# improved-write and max-write formats at 4 KiB and 512 B sectors. Reports
# the completion time and the top wait events (pg_stat_activity sampled
# every 0.1 s) per configuration.
#
# Each format x sector size: a fresh card (iodrive-duo-640-mlc ioDimm 0 at
# --scale), preconditioned to steady state as bench/pgbench.sh does (whole
# device written sequentially, then one capacity of random 4 KiB writes, at
# --timing none), re-attached with model timing, ext4 without discard,
# initdb, the tablespaces, then one run per partition count (the table is
# dropped and a CHECKPOINT taken between runs, so later partition counts
# meet a card that has absorbed the earlier ones' writes).
#
# Results are written to --out after every configuration (a failed run keeps
# the finished ones). Needs root, /dev/fuse, loop devices, fio and
# PostgreSQL (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
usage: bench/pg_insert.sh [options]
  --rows N            rows inserted per configuration (default 1024000)
  --connections N     concurrent connections (default 64, as in the reviews)
  --partitions LIST   partition counts, e.g. "1 16 128" (default "1 16 128")
  --formats LIST      formats (default "stock improved-write max-write")
  --sectors LIST      sector sizes (default "4096 512")
  --full              the whole grid: partitions 1 2 4 8 16 32 64 128
  --scale X           --scale of the card (default 0.01)
  --no-precondition   skip the steady-state preconditioning (fresh card)
  --port N            PostgreSQL TCP port on 127.0.0.1 (default 54331)
  --out FILE          results JSON (default bench/out/pg_insert.json)
Environment: PGBIN (PostgreSQL bin directory), NO_BUILD=1.
EOF
}
die() { echo "pg_insert: $*" >&2; exit 1; }

ROWS=1024000
CONNECTIONS=64
PARTITIONS="1 16 128"
FORMATS="stock improved-write max-write"
SECTORS="4096 512"
SCALE_CARD=0.01
PRECONDITION=1
PORT=54331
OUT=bench/out/pg_insert.json
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=${2:?}; shift 2 ;;
    --connections) CONNECTIONS=${2:?}; shift 2 ;;
    --partitions) PARTITIONS=${2:?}; shift 2 ;;
    --formats) FORMATS=${2:?}; shift 2 ;;
    --sectors) SECTORS=${2:?}; shift 2 ;;
    --full) PARTITIONS="1 2 4 8 16 32 64 128"; shift ;;
    --scale) SCALE_CARD=${2:?}; shift 2 ;;
    --no-precondition) PRECONDITION=0; shift ;;
    --port) PORT=${2:?}; shift 2 ;;
    --out) OUT=${2:?}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ $ROWS =~ ^[0-9]+$ ]] && [ "$ROWS" -ge 1000 ] || die "--rows '$ROWS' must be an integer >= 1000"
[[ $CONNECTIONS =~ ^[0-9]+$ ]] && [ "$CONNECTIONS" -ge 1 ] && [ "$CONNECTIONS" -le 500 ] ||
  die "--connections '$CONNECTIONS' must be an integer in 1..500"
[[ $PORT =~ ^[0-9]+$ ]] || die "--port '$PORT' must be a number"
for p in $PARTITIONS; do
  [[ $p =~ ^[0-9]+$ ]] && [ "$p" -ge 1 ] && [ "$p" -le 1024 ] || die "--partitions: '$p' must be an integer in 1..1024"
done
for s in $SECTORS; do
  [ "$s" = 512 ] || [ "$s" = 4096 ] || die "--sectors: '$s' must be 512 or 4096"
done
for f in $FORMATS; do
  case "$f" in stock|hp|improved-write|max-write) ;; *) die "--formats: unknown format '$f' (stock, hp, improved-write, max-write)" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "needs root (vsl attach, mount)"
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -n "$PGBIN" ] && [ -x "$PGBIN/postgres" ] || die "PostgreSQL not found (PGBIN='$PGBIN'; run scripts/setup.sh)"
command -v fio >/dev/null || die "fio not found (run scripts/setup.sh)"
command -v pgbench >/dev/null || die "pgbench not found (run scripts/setup.sh)"

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target}
[ "${NO_BUILD:-0}" = 1 ] || cargo build --release -q -p blockdev
BIN=$(realpath "$CARGO_TARGET_DIR/release/vsl-blockdev" 2>/dev/null) || die "vsl-blockdev not built ($CARGO_TARGET_DIR/release)"
MAXP=0
for p in $PARTITIONS; do [ "$p" -gt "$MAXP" ] && MAXP=$p; done
# One transaction = one statement of 1000 rows; every connection runs the
# same number of transactions.
TX=$(( (ROWS + 1000 * CONNECTIONS - 1) / (1000 * CONNECTIONS) ))
ROWS_DONE=$(( TX * 1000 * CONNECTIONS ))

mkdir -p "$(dirname "$OUT")"
OUT=$(realpath "$OUT")
work=$(mktemp -d /tmp/openvsl-pginsert.XXXXXX)
chmod 755 "$work"
export OPENVSL_RUN_DIR=$work/run
mnt=$work/mnt
sampler=
cleanup() {
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null || true
  [ -d "$mnt/pgdata" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$mnt/pgdata" -m immediate stop >/dev/null 2>&1 || true
  umount "$mnt" 2>/dev/null || true
  [ -n "${store:-}" ] && "$BIN" detach "$store" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

card_counter() { # field of the attached card's lifetime counters
  "$BIN" status "$store" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
devs = d["devices"] if isinstance(d, dict) else [m for c in d for m in c["members"]]
m = devs[0]
print(m.get("lifetime", m).get(sys.argv[1], 0) if sys.argv[1] != "write_amplification" else m["write_amplification"])' "$1"
}

rows_file=$work/rows.jsonl
: >"$rows_file"
write_json() { # status
  python3 - "$OUT" "$rows_file" "$1" <<PY
import json, sys
out, rows, status = sys.argv[1:4]
json.dump({"tool": "pg_insert", "card": "iodrive-duo-640-mlc ioDimm 0", "card_scale": $SCALE_CARD,
           "timing": "model", "preconditioned": bool($PRECONDITION), "connections": $CONNECTIONS,
           "rows_per_transaction": 1000, "rows": $ROWS_DONE, "postgres": "$("$PGBIN/postgres" --version | awk '{print $3}')",
           "status": status, "results": [json.loads(l) for l in open(rows) if l.strip()]},
          open(out, "w"), indent=2)
PY
}
write_json running

cat >"$work/insert.sql" <<'EOF'
INSERT INTO ins (id, payload) SELECT gen_random_uuid(), repeat('x', 100) FROM generate_series(1, 1000);
EOF
SAMPLE_SQL="SELECT coalesce(string_agg(coalesce(wait_event_type || ':' || wait_event, 'CPU'), ','), '') FROM pg_stat_activity WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()"
PSQL=(psql -X -q -At -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1)

echo "pg_insert: $ROWS_DONE rows ($CONNECTIONS connections x $TX transactions x 1000 rows), partitions: $PARTITIONS; formats: $FORMATS; sectors: $SECTORS; card --scale $SCALE_CARD; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
t_start=$(date +%s)
for sector in $SECTORS; do
  for format in $FORMATS; do
    store=$work/store-$format-$sector
    if [ "$PRECONDITION" = 1 ]; then
      dev=$("$BIN" attach --store "$store" --device iodrive-duo-640-mlc --member 0 \
        --scale "$SCALE_CARD" --format "$format" --sector-size "$sector" --timing none | cut -f1)
      echo "[$format $sector B] preconditioning $dev (sequential fill, one capacity of random 4K writes)" >&2
      fio --name=seq --filename="$dev" --rw=write --bs=1m --direct=1 --ioengine=libaio --iodepth=16 \
        --size=100% --output-format=terse >/dev/null
      fio --name=rnd --filename="$dev" --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32 \
        --numjobs=2 --offset_increment=50% --size=50% --output-format=terse >/dev/null
      "$BIN" detach "$store" >/dev/null
      dev=$("$BIN" attach --store "$store" | cut -f1)
    else
      dev=$("$BIN" attach --store "$store" --device iodrive-duo-640-mlc --member 0 \
        --scale "$SCALE_CARD" --format "$format" --sector-size "$sector" | cut -f1)
    fi
    capacity=$(blockdev --getsize64 "$dev")
    echo "[$format $sector B] $((capacity / 1000000)) MB; ext4, initdb, $MAXP tablespaces (timing model)" >&2
    mkfs.ext4 -q -F -m 0 -E nodiscard "$dev"
    mkdir -p "$mnt"
    mount "$dev" "$mnt"
    mkdir "$mnt/pgdata" "$mnt/ts" "$mnt/log"
    chown postgres: "$mnt/pgdata" "$mnt/ts" "$mnt/log"
    runuser -u postgres -- "$PGBIN/initdb" -D "$mnt/pgdata" >"$work/initdb.log" 2>&1 ||
      die "initdb failed on the card ($format, $sector B): $(tail -1 "$work/initdb.log")"
    if ! runuser -u postgres -- "$PGBIN/pg_ctl" -D "$mnt/pgdata" -l "$mnt/log/server.log" -t 120 \
      -o "-p $PORT -k $mnt/log -c listen_addresses=127.0.0.1 -c max_connections=$((CONNECTIONS + 10)) -c max_wal_size=256MB" \
      -w start >/dev/null 2>&1; then
      reason=$(grep -E 'FATAL|ERROR|could not' "$mnt/log/server.log" 2>/dev/null | head -1 | sed 's/^.*\(FATAL\|ERROR\|LOG\): *//')
      write_json "failed: PostgreSQL did not start ($format, $sector B)"
      die "PostgreSQL failed to start on port $PORT ($format, $sector B): ${reason:-see server log}; finished results kept in $OUT"
    fi
    for i in $(seq 0 $((MAXP - 1))); do
      mkdir "$mnt/ts/ts$i" && chown postgres: "$mnt/ts/ts$i"
      echo "CREATE TABLESPACE ts$i LOCATION '$mnt/ts/ts$i';"
    done | "${PSQL[@]}" postgres >/dev/null
    for parts in $PARTITIONS; do
      {
        echo "CREATE TABLE ins (id uuid NOT NULL, payload text NOT NULL, PRIMARY KEY (id)) PARTITION BY HASH (id);"
        for i in $(seq 0 $((parts - 1))); do
          echo "CREATE TABLE ins_$i (id uuid NOT NULL, payload text NOT NULL) TABLESPACE ts$i;"
          echo "ALTER TABLE ins_$i ADD PRIMARY KEY (id) USING INDEX TABLESPACE ts$i;"
          echo "ALTER TABLE ins ATTACH PARTITION ins_$i FOR VALUES WITH (MODULUS $parts, REMAINDER $i);"
        done
        echo "CHECKPOINT;"
      } | "${PSQL[@]}" -1 postgres >/dev/null
      before_host=$(card_counter host_bytes_written)
      before_nand=$(card_counter nand_bytes_programmed)
      samples=$work/samples-$format-$sector-$parts
      printf '%s\n\\watch 0.1\n' "$SAMPLE_SQL" | "${PSQL[@]}" postgres >"$samples" 2>/dev/null &
      sampler=$!
      load=$(cut -d' ' -f1 /proc/loadavg)
      t0=$(date +%s.%N)
      pgbench -n -h 127.0.0.1 -p "$PORT" -U postgres -c "$CONNECTIONS" -j 2 -t "$TX" \
        -f "$work/insert.sql" postgres >"$work/pgbench.out" 2>&1 ||
        { write_json "failed: pgbench ($format, $sector B, $parts partitions)"
          die "pgbench failed ($format, $sector B, $parts partitions): $(grep -m1 -iE 'error|fatal' "$work/pgbench.out" || tail -1 "$work/pgbench.out")"; }
      t1=$(date +%s.%N)
      kill "$sampler" 2>/dev/null || true
      wait "$sampler" 2>/dev/null || true
      sampler=
      after_host=$(card_counter host_bytes_written)
      after_nand=$(card_counter nand_bytes_programmed)
      count=$("${PSQL[@]}" -c "SELECT count(*) FROM ins" postgres)
      [ "$count" -eq "$ROWS_DONE" ] || die "expected $ROWS_DONE rows, found $count ($format, $sector B, $parts partitions)"
      python3 - "$samples" "$format" "$sector" "$parts" "$t0" "$t1" "$count" \
        "$before_host" "$after_host" "$before_nand" "$after_nand" "$load" "$capacity" >>"$rows_file" <<'PY'
import collections, json, sys
(samples, fmt, sector, parts, t0, t1, rows, bh, ah, bn, an, load, cap) = sys.argv[1:14]
n = 0
c = collections.Counter()
for line in open(samples):
    line = line.strip()
    if not line:
        continue
    n += 1
    c.update(e for e in line.split(",") if e)
total = sum(c.values())
secs = float(t1) - float(t0)
host = int(ah) - int(bh)
nand = int(an) - int(bn)
print(json.dumps({
    "format": fmt, "sector_bytes": int(sector), "partitions": int(parts), "tablespaces": int(parts),
    "rows": int(rows), "seconds": round(secs, 2), "rows_per_s": round(int(rows) / secs, 1),
    "capacity_bytes": int(cap), "host_bytes_written": host, "nand_bytes_programmed": nand,
    "write_amplification": round(nand / host, 2) if host else None,
    "samples": n, "active_backend_samples": total,
    "wait_events": [{"event": e, "samples": k, "share": round(k / total, 3)} for e, k in c.most_common(5)],
    "load_avg_1m": float(load)}))
PY
      write_json running
      top=$(tail -1 "$rows_file" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(", ".join("%s %.0f%%" % (w["event"], 100 * w["share"]) for w in r["wait_events"][:3]))')
      printf '[%s %s B] %3d partitions: %7.1f s (load %s)  waits: %s\n' "$format" "$sector" "$parts" \
        "$(echo "$t1 - $t0" | bc)" "$load" "$top" >&2
      "${PSQL[@]}" -c "DROP TABLE ins" -c "CHECKPOINT" postgres >/dev/null
    done
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$mnt/pgdata" -m fast stop >/dev/null
    umount "$mnt"
    "$BIN" detach "$store" >/dev/null
    rm -rf "$store"
  done
done
write_json complete
echo "pg_insert: done in $(( $(date +%s) - t_start )) s; results: $OUT" >&2
python3 - "$OUT" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"{'format':<15} {'sector':>6} {'parts':>5} {'seconds':>8} {'rows/s':>9} {'WA':>5}  top wait events")
for r in d["results"]:
    w = ", ".join(f"{x['event']} {100*x['share']:.0f}%" for x in r["wait_events"][:3])
    print(f"{r['format']:<15} {r['sector_bytes']:>6} {r['partitions']:>5} {r['seconds']:>8.1f} {r['rows_per_s']:>9.0f} {r['write_amplification'] or 0:>5}  {w}")
PY
