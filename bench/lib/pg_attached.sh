# PostgreSQL on ext4 on an attached card's loop device, for the bench
# scripts that run pgbench there (sourced, not run). The caller sets
# `work` (a scratch directory, mode 755: the postgres user reads it) and
# PORT; the database lives in $work/mnt/pgdata, its socket and log in
# $work/mnt/pglog. Needs root and PostgreSQL (scripts/setup.sh).

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$PGBIN" ] || { echo "$0: PostgreSQL not installed (scripts/setup.sh)" >&2; exit 1; }

# pg_start [SERVER OPTIONS...]: starts the server on $work/mnt (mounted).
pg_start() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -l "$work/mnt/pglog/server.log" \
    -o "-p $PORT -k $work/mnt/pglog -c listen_addresses='' $*" -w start >/dev/null
}

# pg_stop: a clean shutdown (a checkpoint).
pg_stop() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -w stop >/dev/null
}

# pg_on DEV [SERVER OPTIONS...]: ext4 on DEV (no discard at mkfs), mounted
# on $work/mnt, a new cluster started there.
pg_on() {
  local dev=$1
  shift
  mkdir -p "$work/mnt"
  mkfs.ext4 -q -F -E nodiscard "$dev"
  mount "$dev" "$work/mnt"
  mkdir "$work/mnt/pgdata" "$work/mnt/pglog"
  chown postgres: "$work/mnt/pgdata" "$work/mnt/pglog"
  runuser -u postgres -- "$PGBIN/initdb" -D "$work/mnt/pgdata" >/dev/null 2>&1
  pg_start "$@"
}

# pgbench_init SCALE: pgbench's tables at SCALE.
pgbench_init() {
  runuser -u postgres -- pgbench -h "$work/mnt/pglog" -p "$PORT" -i -q -s "$1" postgres >/dev/null 2>&1
}

# pgbench_tps CLIENTS SECONDS: TPC-B like for SECONDS; prints the TPS.
pgbench_tps() {
  (cd "$work/mnt/pglog" && runuser -u postgres -- pgbench -h "$work/mnt/pglog" -p "$PORT" \
    -c "$1" -j 2 -T "$2" postgres 2>/dev/null) | grep -oP 'tps = \K[0-9.]+' | head -1
}

# unmount_mnt: unmounts $work/mnt, retrying while the server's last
# processes let go of it.
unmount_mnt() {
  local i
  for i in $(seq 20); do
    umount "$work/mnt" 2>/dev/null && return 0
    [ "$i" -lt 20 ] || { fuser -vm "$work/mnt" >&2 || true; umount "$work/mnt"; }
    sleep 0.5
  done
}

# pg_cleanup: stops the server at once and unmounts (for an EXIT trap).
pg_cleanup() {
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/mnt/pgdata" -m immediate stop >/dev/null 2>&1 || true
  umount "$work/mnt" 2>/dev/null || true
}

# The block layer's own view of a device's requests: the kernel's
# block_rq_issue and block_rq_complete tracepoints (what blktrace's D and C
# events are), in a tracefs instance of this script's own, mono clock.
# blk_trace_start DEV OUT [FUSE_MOUNT]: starts writing DEV's events to OUT
# (returns 1, saying why, when tracefs or the events are not there); with
# FUSE_MOUNT also the fuse_request_send / fuse_request_end events of that
# FUSE mount's connection (the round trip of each request to the daemon).
blk_trace_start() {
  local dev=$1 out=$2 mnt=${3:-} tr=/sys/kernel/tracing
  [ -d "$tr/instances" ] || mount -t tracefs nodev "$tr" 2>/dev/null || true
  [ -d "$tr/events/block/block_rq_issue" ] || { echo "$0: no block tracepoints in tracefs" >&2; return 1; }
  BLK_TRACE=$tr/instances/openvsl-bench-$$
  mkdir "$BLK_TRACE"
  local maj min
  maj=$((16#$(stat -c %t "$dev")))
  min=$((16#$(stat -c %T "$dev")))
  echo mono >"$BLK_TRACE/trace_clock"
  echo 16384 >"$BLK_TRACE/buffer_size_kb"
  local e
  for e in block_rq_issue block_rq_complete; do
    echo "dev == $(((maj << 20) | min))" >"$BLK_TRACE/events/block/$e/filter"
    echo 1 >"$BLK_TRACE/events/block/$e/enable"
  done
  if [ -n "$mnt" ] && [ -d "$BLK_TRACE/events/fuse" ]; then
    # A FUSE connection is numbered by its superblock's (anonymous) device.
    local conn
    conn=$(stat -c %d "$mnt")
    for e in fuse_request_send fuse_request_end; do
      echo "connection == $conn" >"$BLK_TRACE/events/fuse/$e/filter"
      echo 1 >"$BLK_TRACE/events/fuse/$e/enable"
    done
  fi
  cat "$BLK_TRACE/trace_pipe" >"$out" &
  BLK_TRACE_PID=$!
}

# blk_trace_stop: stops the events, lets the reader empty the buffer, and
# removes the instance.
blk_trace_stop() {
  [ -n "${BLK_TRACE:-}" ] || return 0
  local e
  for e in block/block_rq_issue block/block_rq_complete fuse/fuse_request_send fuse/fuse_request_end; do
    echo 0 >"$BLK_TRACE/events/$e/enable" 2>/dev/null || true
  done
  sleep 1
  kill "$BLK_TRACE_PID" 2>/dev/null || true
  wait "$BLK_TRACE_PID" 2>/dev/null || true
  rmdir "$BLK_TRACE" 2>/dev/null || true
  BLK_TRACE=
}
