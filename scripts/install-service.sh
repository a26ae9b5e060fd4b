#!/usr/bin/env bash
# Installs openvsl's systemd units (dist/systemd): openvsl@.service, one
# supervised card per store, and openvsl-restore.service, which re-attaches
# at boot the stores attached by hand when the machine went down
# (`vsl attach --restore`). Run as root from a checkout.
#
#   scripts/install-service.sh                   install, enable the restore unit
#   scripts/install-service.sh --enable /srv/c   also enable and start openvsl@srv-c.service
#
# The units call the vsl binary at $OPENVSL_BIN (default /usr/local/bin/vsl;
# copied there from target/release/vsl if missing). $OPENVSL_UNIT_DIR
# (default /etc/systemd/system) is where the units go; systemctl is only
# called when systemd runs this machine and $OPENVSL_NO_SYSTEMCTL is unset.
set -euo pipefail
cd "$(dirname "$0")/.."
unit_dir=${OPENVSL_UNIT_DIR:-/etc/systemd/system}
bin=${OPENVSL_BIN:-/usr/local/bin/vsl}
stores=()
while [ $# -gt 0 ]; do
  case "$1" in
    --enable) [ $# -ge 2 ] || { echo "install-service: --enable needs a store directory" >&2; exit 2; }
              stores+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "install-service: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ ! -x "$bin" ]; then
  if [ -z "${OPENVSL_BIN:-}" ] && [ -x target/release/vsl ]; then
    install -D -m 0755 target/release/vsl "$bin"
    echo "install-service: installed $bin from target/release/vsl"
  else
    echo "install-service: $bin is not an executable vsl (build with cargo build --release --bin vsl, or set OPENVSL_BIN)" >&2
    exit 1
  fi
fi
mkdir -p "$unit_dir"
for unit in openvsl@.service openvsl-restore.service; do
  sed "s|/usr/local/bin/vsl|$bin|g" "dist/systemd/$unit" > "$unit_dir/$unit.tmp"
  chmod 0644 "$unit_dir/$unit.tmp"
  mv "$unit_dir/$unit.tmp" "$unit_dir/$unit"
  echo "install-service: $unit_dir/$unit (ExecStart $bin)"
done
if [ -n "${OPENVSL_NO_SYSTEMCTL:-}" ] || [ ! -d /run/systemd/system ]; then
  echo "install-service: systemd is not running here (or OPENVSL_NO_SYSTEMCTL is set): not enabling anything"
  for s in "${stores[@]}"; do
    echo "  later: systemctl enable --now openvsl@$(systemd-escape --path "$s").service"
  done
  exit 0
fi
systemctl daemon-reload
systemctl enable openvsl-restore.service
for s in "${stores[@]}"; do
  unit="openvsl@$(systemd-escape --path "$s").service"
  systemctl enable --now "$unit"
  echo "install-service: $unit enabled and started"
done
