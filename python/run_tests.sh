#!/usr/bin/env bash
# The Python package's tests, as CI runs them (.ci/run, after the cargo
# tests): build the openvsl wheel with maturin, install it in a fresh venv
# (with pytest and, if it can be installed, Ray), run python/tests there.
# The tools venv (maturin) is made by scripts/setup.sh.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
tools="${OPENVSL_PY_TOOLS:-$HOME/.cache/openvsl/py-tools}"
[ -x "$tools/bin/maturin" ] || { echo "python tests: no maturin in $tools: run scripts/setup.sh" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "python tests: building the wheel" >&2
"$tools/bin/maturin" build --quiet --release -m "$repo/crates/py/Cargo.toml" \
  -i "$tools/bin/python" --out "$work/wheel"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "$work"/wheel/openvsl-*.whl pytest
if ! "$work/venv/bin/pip" install --quiet "ray>=2.9"; then
  echo "*** python tests: Ray could not be installed: the Ray tests will be SKIPPED ***" >&2
fi
# The vsl binary for the `vsl sweep --engine ray` test (built by the cargo
# tests, in CARGO_TARGET_DIR when that is set).
export VSL_BIN="${VSL_BIN:-${CARGO_TARGET_DIR:-$repo/target}/release/vsl}"
# pytest's and Ray's scratch in the work directory too, removed on exit
# (their defaults, /tmp/pytest-of-USER and /tmp/ray, stay behind).
export RAY_TMPDIR="$work/ray"
cd "$work"
"$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider --basetemp "$work/pytest" "$repo/python/tests"
