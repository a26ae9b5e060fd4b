#!/usr/bin/env python3
"""Each leave-one-out refit of a `vsl fit --loo` run, at another scale.

`vsl fit --loo` evaluates each refit's point on the card the search ran on
(e.g. --scale 0.05). This writes, for every figure with a refit point, the
fitted preset with that point's values and runs `vsl validate` at --scale
(default 1, the full card) for that figure's format: the prediction of
the row by a fit that did not see it, on the full card.

    bench/loo_confirm.py FIT.json FITTED.toml [--scale 1] [--jobs 2] [--alone] [--only TEXT] [--out DIR]

FIT.json is `vsl fit --json` (figures of statistic `row`, i.e. a table of
`vsl validate` rows such as bench/fit_640mlc_steady.toml), FITTED.toml its
`--out`. By default each run is the figure's format's whole table, as
`vsl validate` runs it at full size (its own --round, --window and
--max-precondition, not the fit's); `--alone` runs only the tests the
held-out row needs, a quicker look (on the 640 MLC's fit of 2026-12-07
the stock 8K 70/30 σ at its refit's point was 4.93 ms either way).
Prints one line per figure: measured, the LOO error at the fit's
scale and at --scale (the error against the nearer end of a measured
range, as `vsl validate` and `vsl fit` judge), and the count within ±25 %.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VSL = os.environ.get("VSL", os.path.join(HERE, "..", "target", "release", "vsl"))
# Free parameters that `vsl fit` moves as multipliers of the base preset's
# value (crates/lab/src/fit.rs, `apply`).
MULTIPLIERS = {"nand.read_ns", "nand.program_ns", "nand.bus_bytes_per_s"}
INTEGER = re.compile(r"^-?\d+$")


def fail(msg):
    print(f"loo_confirm: {msg}", file=sys.stderr)
    sys.exit(1)


def field(text, key):
    m = re.search(r"(?m)^%s = (.*)$" % re.escape(key), text)
    return m.group(1).strip() if m else None


def preset_at(text, params, point):
    """The fitted preset's text with the free parameters at `point`."""
    for p, v in zip(params, point):
        key = p["name"].split(".", 1)[1]
        cur = field(text, key)
        if cur is None:
            fail(f"{p['name']} not found in the fitted preset")
        if p["name"] in MULTIPLIERS:
            # The file holds base × fitted multiplier; the point is a multiplier.
            v = float(cur) / p["fitted"] * v
        if INTEGER.match(cur):
            new = str(round(v))
        elif cur in ("true", "false"):
            new = "true" if v >= 0.5 else "false"
        else:
            new = repr(float(v))
        text = re.sub(r"(?m)^%s = .*$" % re.escape(key), f"{key} = {new}", text, count=1)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fit_json", help="the fit's report (vsl fit --loo --json)")
    ap.add_argument("fitted_toml", help="the fit's preset (vsl fit --out)")
    ap.add_argument("--scale", type=float, default=1.0, help="the card to run on (1: full size)")
    ap.add_argument("--jobs", type=int, default=2, help="runs at once")
    ap.add_argument("--alone", action="store_true",
                    help="run each held-out row alone (only the tests it needs), not its whole table")
    ap.add_argument("--out", default=None, help="directory for the presets and tables")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT",
                    help="only the held-out figures whose name (\"format: test\") contains TEXT (repeatable)")
    a = ap.parse_args()
    try:
        rep = json.load(open(a.fit_json))
        fitted = open(a.fitted_toml).read()
    except (OSError, ValueError) as e:
        fail(str(e))
    if rep.get("tool") != "openvsl-fit":
        fail(f"{a.fit_json}: not a vsl fit --json report")
    params = rep["parameters"]
    out = a.out or os.path.join(os.path.dirname(os.path.abspath(a.fit_json)), "loo-confirm")
    os.makedirs(out, exist_ok=True)
    jobs = []
    for i, f in enumerate(rep["figures"]):
        if not f.get("loo_point"):
            continue
        if a.only and not any(t in f["figure"] for t in a.only):
            continue
        fmt, test = f["figure"].split(": ", 1)
        path = os.path.join(out, f"loo-{i:02}.toml")
        with open(path, "w") as fh:
            fh.write(preset_at(fitted, params, f["loo_point"]))
        jobs.append((i, f, fmt, test, path))
    if not jobs:
        fail("no figure has a leave-one-out point (run vsl fit with --loo)" if not a.only
             else f"no figure with a leave-one-out point matches --only {a.only}")

    def run(job):
        i, f, fmt, test, path = job
        js = os.path.join(out, f"loo-{i:02}.json")
        cmd = [VSL, "validate", "--scale", str(a.scale), "--format", fmt, "-j", "1",
               "--device", path, "--json", js]
        if a.alone:
            cmd += ["--rows", test]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            return job, None, r.stderr.strip().splitlines()[-1:] or ["failed"]
        rows = [x for x in json.load(open(js))["rows"] if x["test"] == test and x["format"] == fmt]
        if len(rows) != 1:
            return job, None, [f"row '{test}' not in the table"]
        return job, rows[0], None

    within = 0
    print(f"{'figure held out':<62} {'measured':>12} {'LOO (fit)':>10} {'LOO @' + str(a.scale):>10}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        for job, row, err in ex.map(run, jobs):
            i, f, fmt, test, _ = job
            if row is None:
                fail(f"{f['figure']}: {err[0]}")
            # validate's ratio: the model over the nearer end of a measured
            # range, 1 inside it or above a lower bound it meets.
            e = row["ratio"] - 1
            within += abs(e) <= 0.25
            lo, hi = row["measured_lo"], row["measured_hi"]
            measured = (f">={lo:g}" if hi is None else f"{lo:g}" if lo == hi
                        else f"{lo:g}-{hi:g}")
            print(f"{f['figure']:<62} {measured:>12} {f['loo_error_pct']:>9.1f}% {e * 100:>9.1f}%",
                  flush=True)
    how = "each row alone" if a.alone else "each in its whole table"
    print(f"{within} of {len(jobs)} held-out rows within ±25 % at scale {a.scale} ({how})")


if __name__ == "__main__":
    main()
