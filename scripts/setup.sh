#!/usr/bin/env bash
# Installs what openvsl needs on a fresh Debian machine (run as root, or with
# sudo available): a Rust toolchain if missing, and the system tools the
# tests and benchmarks use (fio, GNU time, sysbench, PostgreSQL, MariaDB). Idempotent.
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
# The reboot test of `vsl attach --restore` unmounts FUSE as a reboot would.
command -v fusermount3 >/dev/null 2>&1 || need_apt+=(fuse3)
command -v pgbench >/dev/null 2>&1 || need_apt+=(postgresql)
# vsl serve's /metrics test: a real Prometheus server scrapes it; its TLS
# test makes a self-signed certificate with openssl.
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
# vsl serve's browser test (crates/web): headless Chromium driven over CDP.
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# vsl pts --pdf's test reads the printed PDFs (pdfinfo, pdftotext).
command -v pdftotext >/dev/null 2>&1 || need_apt+=(poppler-utils)
# bench/pts_shots.py: the report screenshots, quantised to 256 colours.
command -v pngquant >/dev/null 2>&1 || need_apt+=(pngquant)
# bench/attach_model.sh: sysbench fileio on ext4 on the attached card.
command -v sysbench >/dev/null 2>&1 || need_apt+=(sysbench)
# bench/sysbench_oltp.sh: sysbench OLTP against MariaDB on the attached card.
[ -x /usr/sbin/mariadbd ] || need_apt+=(mariadb-server)
# The Python package (crates/py) and its tests: venv + pip.
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)

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
# maturin (builds the openvsl wheel), pandas, pytest and Ray, from PyPI, in
# a tools venv (Debian's Python refuses system-wide pip installs).
py_tools="${OPENVSL_PY_TOOLS:-$HOME/.cache/openvsl/py-tools}"
if [ ! -x "$py_tools/bin/maturin" ] || ! "$py_tools/bin/python" -c 'import pandas, pytest' >/dev/null 2>&1; then
  echo "setup: installing maturin, pandas, pytest in $py_tools" >&2
  python3 -m venv "$py_tools"
  "$py_tools/bin/pip" install --quiet --upgrade pip
  "$py_tools/bin/pip" install --quiet "maturin>=1.5,<2" "pandas>=1.5" pytest
fi
if ! "$py_tools/bin/python" -c 'import ray' >/dev/null 2>&1; then
  "$py_tools/bin/pip" install --quiet "ray>=2.9" ||
    echo "setup: *** Ray could not be installed: the Ray sweep tests will be skipped ***" >&2
fi
echo "setup: ok ($(cargo --version), $(fio --version))" >&2
