#!/usr/bin/env bash
# Installs what openvsl needs on a fresh Debian machine (run as root, or with
# sudo available): a Rust toolchain if missing, and the system tools the
# tests and benchmarks use (fio, GNU time, sysbench). Idempotent.
set -euo pipefail

need_apt=()
command -v fio >/dev/null 2>&1 || need_apt+=(fio)
[ -x /usr/bin/time ] || need_apt+=(time)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# vsl attach and its tests (blockdev): loop devices, ext4, setpriv, mount;
# PostgreSQL for bench/pgbench.sh.
command -v losetup >/dev/null 2>&1 || need_apt+=(util-linux)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
command -v mkfs.ext4 >/dev/null 2>&1 || need_apt+=(e2fsprogs)
command -v mount >/dev/null 2>&1 || need_apt+=(mount)
command -v pgbench >/dev/null 2>&1 || need_apt+=(postgresql)
# vsl serve's browser test (crates/web): headless Chromium driven over CDP.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# bench/attach_model.sh: sysbench fileio on ext4 on the attached card.
command -v sysbench >/dev/null 2>&1 || need_apt+=(sysbench)

if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${need_apt[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: installing Rust (rustup)" >&2
    curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    export PATH="$HOME/.cargo/bin:$PATH"
  fi
fi
echo "setup: ok ($(cargo --version), $(fio --version))" >&2
