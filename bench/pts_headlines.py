#!/usr/bin/env python3
"""Headline numbers of a `vsl pts --test all` run, as a Markdown table.

    bench/pts_headlines.py REPORT_DIR/results.json

One column per target: IOPS matrix corners and the tracking point, sequential
throughput, T1Q1 latency, WSAT (fresh → last round, where GC first moved data),
HIR (mean IOPS per segment), XSR (mean MB/s per group), DIRTH and ECW (max
point and max within the latency ceiling), with each test's steady-state
outcome and target time.
"""

import json
import sys


def main():
    doc = json.load(open(sys.argv[1]))
    res = doc["results"]
    targets = []
    for r in res:
        if r["target"] not in targets:
            targets.append(r["target"])
    by = {(r["test"], r["target"]): r for r in res}
    rows = []

    def row(name, f):
        cells = []
        for t in targets:
            try:
                cells.append(f(t))
            except (KeyError, StopIteration, IndexError, ZeroDivisionError, TypeError):
                cells.append("–")
        rows.append((name, cells))

    def point(test, t, label):
        return next(p for p in by[(test, t)]["window"] if p["label"] == label)

    def steady(test, t):
        r = by[(test, t)]
        if r.get("error"):
            return "FAILED: " + r["error"]
        out = []
        for s in r["steady"]:
            # "preconditioning: IOPS …" / "T×Q: IOPS …": the phase is enough.
            phase = s["variable"].split(": ")[0] + ": " if ": " in s["variable"] else ""
            c = s["converged_round"]
            out.append(phase + (f"steady at round {c}" if c
                                 else f"not steady in {s['rounds_run']} rounds"))
        return "; ".join(out) or "–"

    def k(v):
        return f"{v:,.0f}"

    def tt(test):
        row(f"{test}: steady state; target time; I/Os", lambda t: "{}; {:,.0f} s; {:,.0f} M".format(
            steady(test, t), by[(test, t)]["target_s"], by[(test, t)]["ios"] / 1e6))

    # IOPS: corners of the matrix (largest and smallest block run, 100/0 and 0/100).
    tt("iops")
    sizes = sorted({p["bs"] for t in targets for p in by[("iops", t)]["window"]})
    for mix in ("100/0", "65/35", "0/100"):
        for bs in sorted({sizes[0], 4096, sizes[-1]}):
            lab = f"{mix} {bs // 1024 if bs % 1024 == 0 else bs / 1024}KiB"
            row(f"IOPS {lab}", lambda t, lab=lab: k(point("iops", t, lab)["stats"]["iops"]))
    tt("throughput")
    for l in ("SEQ 1024KiB W", "SEQ 1024KiB R", "SEQ 128KiB W", "SEQ 128KiB R"):
        row(f"{l} MB/s", lambda t, l=l: k(point("throughput", t, l)["stats"]["mb_per_s"]))
    tt("latency")
    for l in ("100/0 4KiB", "0/100 4KiB", "65/35 8KiB"):
        row(f"latency {l} avg / max / 5 nines µs", lambda t, l=l: "{:.1f} / {:,.0f} / {:,.0f}".format(
            point("latency", t, l)["stats"]["lat_avg_us"], point("latency", t, l)["stats"]["lat_max_us"],
            point("latency", t, l)["lat_p99999_us"]))

    def wsat(t):
        tl = by[("wsat", t)]["timeline"]
        gc = next(p for p in tl if p["stats"]["gc_pages_moved"] > 0)
        last5 = [p["stats"]["iops"] for p in tl[-5:]]
        return "{} → {} (last 5 rounds' mean); GC first moved data at {:,.1f} GB written ({:,.0f} s); {:,.0f} GB written in all".format(
            k(tl[0]["stats"]["iops"]), k(sum(last5) / len(last5)), gc["tgbw"], gc["t_s"], tl[-1]["tgbw"])
    row("WSAT IOPS: fresh → end", wsat)

    def segments(test, t, unit):
        tl = by[(test, t)]["timeline"]
        order = []
        for p in tl:
            if p["phase"] not in order:
                order.append(p["phase"])
        out = []
        for ph in order:
            v = [p["stats"][unit] for p in tl if p["phase"] == ph]
            out.append(f"{ph}: {k(sum(v) / len(v))}")
        return "; ".join(out)

    tt("hir")
    row("HIR preconditioned steady state IOPS", lambda t: k(by[("hir", t)]["steady"][0]["window"]["mean"]))
    row("HIR mean IOPS per segment", lambda t: segments("hir", t, "iops"))
    row("XSR mean MB/s per group", lambda t: segments("xsr", t, "mb_per_s"))

    def dirth(test, t):
        r = by[(test, t)]
        mx = max(r["window"], key=lambda p: p["stats"]["iops"])
        c = r["ceiling_point"]
        ceil = "none" if c is None else "{} {} IOPS (p99.99 {:,.0f} µs)".format(
            c["label"], k(c["stats"]["iops"]), c["stats"]["lat_p9999_us"])
        return "max {} {} IOPS, ART {:,.0f} µs; within ceiling: {}".format(
            mx["label"], k(mx["stats"]["iops"]), mx["stats"]["lat_avg_us"], ceil)
    for test in ("dirth", "ecw"):
        tt(test)
        row(f"{test.upper()} max point; max within the ceiling", lambda t, test=test: dirth(test, t))

    print("| | " + " | ".join(targets) + " |")
    print("|---" * (len(targets) + 1) + "|")
    for name, cells in rows:
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
