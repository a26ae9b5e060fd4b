"""A sweep on a Ray cluster: one Ray task per unfinished run, each calling
the openvsl package on a worker (which must have it installed). The
driver plans, skips finished runs and stores each result as it arrives
through the same functions as the local pool, so both write the same files.

    python -m openvsl.ray_sweep PLAN.toml --out DIR --address ADDR [--quiet]

is what ``vsl sweep --engine ray`` runs.
"""

import argparse
import sys

from . import _native
from ._native import OpenvslError


def _connect(address):
    try:
        import ray
    except ImportError:
        raise OpenvslError("--engine ray needs Ray: pip install 'ray[default]'") from None
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, ignore_reinit_error=True)
    except Exception as e:  # Ray raises ConnectionError, ValueError, RuntimeError...
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise OpenvslError(f"cannot reach the Ray cluster at {address}: {first}") from None
    return ray


def sweep_on_ray(text, is_json, name, out, address, quiet):
    """Runs the plan's unfinished runs as Ray tasks; returns results.csv's path."""
    runs = _native.plan(text, is_json, name)
    ray = _connect(address)
    run_task = ray.remote(_native_run)
    pending = {}
    skipped = 0
    for key, _, _ in runs:
        if _native.is_done(out, key):
            skipped += 1
        else:
            pending[run_task.remote(text, is_json, name, key)] = key
    failed = []
    ran = 0
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        key = pending.pop(done[0])
        try:
            _native.store(out, key, ray.get(done[0]))
            ran += 1
        except Exception as e:
            failed.append((key, (str(e).strip().splitlines() or ["failed"])[-1]))
        if not quiet:
            print(f"\rray: {ran + len(failed)}/{len(runs) - skipped} runs", end="", file=sys.stderr)
    if not quiet:
        print(file=sys.stderr)
    return _native.finish(text, is_json, name, out, ran, skipped, failed, quiet)


def _native_run(text, is_json, name, key):
    from openvsl import _native as native

    return native.run_planned(text, is_json, name, key)


def main(argv=None):
    p = argparse.ArgumentParser(prog="openvsl.ray_sweep", description=__doc__)
    p.add_argument("plan")
    p.add_argument("--out", default="sweep")
    p.add_argument("--address", required=True)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    try:
        with open(a.plan, encoding="utf-8") as f:
            text = f.read()
        sweep_on_ray(text, False, a.plan, a.out, a.address, a.quiet)
    except OSError as e:
        print(f"vsl: error: cannot read sweep plan {a.plan}: {e.strerror}", file=sys.stderr)
        return 1
    except OpenvslError as e:
        print(f"vsl: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
