"""openvsl from Python: runs and sweeps of the modelled Fusion-io style card.

Every function calls the same Rust code as the ``vsl`` command line (the
native module ``openvsl._native``); options are ``vsl run``'s, spelled as
keyword arguments (``sector_size=512``, ``bssplit="4k/50:64k/50"``).

    >>> import openvsl
    >>> summary, intervals = openvsl.run(format="hp", profile="4k-randwrite",
    ...                                  duration="30s", interval="5s", scale=0.01)
    >>> intervals[["t_s", "iops", "lat_p99_us", "write_amplification"]]

Errors raise :class:`OpenvslError` with ``vsl``'s one-line message.
"""

import json
import os

import pandas as pd

from . import _native
from ._native import OpenvslError

__all__ = ["run", "devices", "profiles", "policies", "placements", "sweep", "plan", "OpenvslError"]


def _argv(options):
    """``vsl run`` arguments from keyword options: ``True`` is a bare flag,
    ``False`` and ``None`` are left out, a list or tuple repeats the option
    (``stream=["0-64G", "64G-128G"]``), anything else is its ``str``."""
    argv = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, (list, tuple)):
            for v in value:
                argv += [flag, str(v)]
        else:
            argv += [flag, str(value)]
    return argv


def run(device="iodrive-duo-640-mlc", format="stock", profile=None, duration="1h", seed=1, **options):
    """Runs a workload on a modelled card in virtual time.

    Any ``vsl run`` option may be given (``threads``, ``qd``, ``interval``,
    ``scale``, ``precondition=True``, ``rw``, ``bs``, ``rwmixread``, ...).
    Returns ``(summary, intervals)``: the run's summary as a dict (what
    ``vsl run --json`` writes under ``summary``) and a pandas DataFrame with
    one row per reporting interval. The same options give the same frame.
    """
    opts = dict(device=device, profile=profile, duration=duration, seed=seed)
    if options.get("capacity") is None and options.get("overprovision") is None:
        opts["format"] = format
    opts.update(options)
    report = json.loads(_native.run_json(_argv(opts)))
    return report["summary"], pd.DataFrame(report["intervals"])


def devices():
    """The device presets (``vsl devices --json``): a list of dicts."""
    return json.loads(_native.devices_json())


def profiles():
    """The named workload profiles: ``{name: description}``."""
    return dict(_native.profiles())


def policies():
    """The GC victim policies ``run(gc_policy=...)`` and sweep plans take
    (``vsl policies``): ``{spelling: (summary, source)}``, e.g.
    ``"d-choices:D"`` for ``gc_policy="d-choices:8"``."""
    return {name: (summary, source) for name, summary, source in _native.policies()}


def placements():
    """The placement policies ``run(placement=...)`` takes (``vsl
    policies``): ``{spelling: (summary, source)}``; ``"streams"`` takes
    ``stream=["START-END", ...]`` (bytes of the card)."""
    return {name: (summary, source) for name, summary, source in _native.placements()}


def _plan_source(plan):
    """(text, is_json, name) of a plan given as a path or a dict."""
    if isinstance(plan, dict):
        return json.dumps(plan), True, "plan"
    path = os.fspath(plan)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), False, path
    except OSError as e:
        raise OpenvslError(f"cannot read sweep plan {path}: {e.strerror}") from None


def plan(plan):
    """The runs a plan expands to: a DataFrame with the key and options of each."""
    text, is_json, name = _plan_source(plan)
    rows = [dict(params, key=key) for key, params, _ in _native.plan(text, is_json, name)]
    return pd.DataFrame(rows)


def sweep(plan, out="sweep", engine="local", workers=None, address=None, quiet=True):
    """Runs a sweep plan (a TOML file's path, or a dict with the same keys:
    ``vsl run`` options, lists swept, ``runs`` a list of dicts) and returns
    ``results.csv`` as a DataFrame. Runs already finished in ``out`` are not
    run again. ``engine="ray"`` runs them as Ray tasks on the cluster at
    ``address`` (``ray.init(address)``; ``None`` starts a local one).
    """
    text, is_json, name = _plan_source(plan)
    out = os.fspath(out)
    if engine == "local":
        if address is not None:
            raise OpenvslError("address is for engine='ray'")
        csv = _native.sweep_local(text, is_json, name, out, workers, quiet)
    elif engine == "ray":
        from .ray_sweep import sweep_on_ray

        csv = sweep_on_ray(text, is_json, name, out, address, quiet)
    else:
        raise OpenvslError(f"unknown engine '{engine}' (known: local, ray)")
    return pd.read_csv(csv, dtype={"key": str})
