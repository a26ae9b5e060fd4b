#!/usr/bin/env python3
"""The PTS IOPS test's protocol with the lab and fio interleaved point by
point (bench/pts_fio.sh MODE=interleaved; issue 31).

usage: pts_interleaved.py PTS_OUT_DIR FILE VSL MEM

PTS_OUT_DIR holds a `vsl pts --test iops` run on file:FILE:SIZE; its plan
(round time, threads x QD, WIPC multiple) and its point order are replayed:
purge (punch-hole), WIPC (fio, 128 KiB sequential writes, 1 job x QD 32),
then ROUNDS rounds (default: as many as the lab's run) of every point in
the PTS order, each point run by the lab (`vsl run --target file:...`) and
by fio for one round time, back to back, the tool that goes first
alternating from point to point and round to round. Each point's figure is
the mean over the last five rounds, as the PTS measurement window.

Two tools minutes apart on this machine's virtual disk see a different
disk (its speed drifts over minutes: docs/REALDEV.md); seconds apart they
see the same one. So this compares the engines under the PTS protocol; the
`vsl pts` run's own window is printed next to it (pts_over_lab), which
shows the drift between that run and this one, not a tool difference.

With SS=1, each point instead runs once to fio's own steady state: the
bench writes a job file per point (PTS_OUT_DIR/fio/ss-jobs/*.fio: the
point at threads x QD, `ss=iops:20%`, `ss_dur` five round times, at most
25 round times) and fio runs it; the lab runs the same point just before
and just after it, the second run as long as fio ran, and its figure is
the mean of the two runs' last five round-time intervals (their windows
are then centred on fio's, so a steady drift of the disk cancels),
fio's the mean over its steady-state window. BRACKET=0: one lab run per
point, before or after fio, alternating (the first runs of 2026-11-27).
Points follow the PTS order after one purge and WIPC; PASSES=N goes over
them N times and averages; SS_DUR=N sets fio's steady-state window (and
the lab's) to N round times instead of five.

Writes PTS_OUT_DIR/fio/interleaved.csv (interleaved-ss.csv with SS=1) and
the per-round figures as JSON next to it.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def fio_global(path, size, mem="malloc"):
    """The [global] section of every fio job of the PTS comparisons: the
    file, O_DIRECT, io_uring, jobs as threads reported together,
    uniform offsets with replacement as the lab draws them."""
    return f"""[global]
filename={path}
size={size}
direct=1
ioengine=io_uring
thread=1
group_reporting=1
norandommap=1
randrepeat=0
mem={mem}
"""


def point_label(q, rd, bs):
    """A point's name in the CSVs: the `vsl pts` window's label (q), e.g.
    65/35_4KiB."""
    return (q["label"] if q else f"{rd:g}/{100 - rd:g} {bs}").replace(" ", "_")


def die(msg):
    sys.exit(f"pts_interleaved: {msg}")


def main():
    if len(sys.argv) != 5:
        die("usage: pts_interleaved.py PTS_OUT_DIR FILE VSL MEM")
    out, path, vsl, mem = sys.argv[1:]
    if mem not in ("pages", "huge"):
        die(f"MEM={mem}: expected pages or huge")
    try:
        d = json.load(open(f"{out}/results.json"))
    except (OSError, ValueError) as e:
        die(f"{out}/results.json: {e}")
    plan = d.get("plan") or die(f"{out}/results.json: not the results of a vsl pts run (no plan)")
    res = next((r for r in d["results"] if r["test"] == "iops" and not r.get("error")), None)
    if res is None:
        die(f"{out}/results.json: no IOPS test result")
    order = [(q["read_pct"], q["bs"]) for q in res["rounds"][0]["points"]]
    pts_window = {(q["read_pct"], q["bs"]): q for q in res["window"]}
    rounds = int(os.environ.get("ROUNDS") or max(5, res["steady"][0]["rounds_run"]))
    round_ms = int(plan["round_ns"] / 1e6)
    threads, qd = plan["threads"], plan["qd"]
    size = os.stat(path).st_size
    fio_mem = "malloc" if mem == "pages" else "shmhuge"
    os.makedirs(f"{out}/fio", exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="pts-interleaved.")
    # What `vsl run` said when the disk under the file did not see the I/O
    # (tmpfs, a RAM disk): the comparison then measured memory, not a disk.
    not_on_device = set()

    def lab(rd, bs, duration_ms=round_ms, window=1):
        """The lab's IOPS at one point: the mean of its last `window`
        round-time intervals of a `duration_ms` run."""
        j = f"{tmp}/lab.json"
        subprocess.run([vsl, "run", "--target", f"file:{path}:{size}", "--rw", "randrw",
                        "--rwmixread", f"{rd:g}", "--bs", str(bs), "--threads", str(threads),
                        "--qd", str(qd), "--duration", f"{duration_ms}ms", "--interval", f"{round_ms}ms",
                        "--layout", "skip", "--mem", mem, "--json", j, "-q"],
                       check=True, stderr=subprocess.PIPE, text=True)
        d = json.load(open(j))
        m = d.get("measured_on_device") or {}
        if not m.get("measured", True):
            not_on_device.add(m.get("words", "not measured on the device"))
        return statistics.mean(i["iops"] for i in d["intervals"][-window:])

    def fio(rd, bs):
        p = subprocess.run(["fio", "--name=pts", f"--filename={path}", f"--size={size}",
                            "--direct=1", "--ioengine=io_uring", "--thread", "--group_reporting",
                            "--norandommap", "--randrepeat=0", "--rw=randrw",
                            f"--rwmixread={rd:g}", f"--bs={bs}", f"--numjobs={threads}",
                            f"--iodepth={qd}", "--time_based", f"--runtime={round_ms}ms",
                            f"--mem={fio_mem}", "--output-format=json"],
                           check=True, capture_output=True, text=True)
        j = json.loads(p.stdout)["jobs"][0]
        return j["read"]["iops"] + j["write"]["iops"]

    print(f"purge (punch-hole) of {path}", file=sys.stderr)
    subprocess.run(["fallocate", "--punch-hole", "--offset", "0", "--length", str(size), path], check=True)
    subprocess.run(["sync", path], check=True)
    loops = max(1, round(plan["wipc_multiple"]))
    print(f"WIPC: {loops} x the file of 128 KiB sequential writes (fio)", file=sys.stderr)
    subprocess.run(["fio", "--name=wipc", f"--filename={path}", f"--size={size}", "--direct=1",
                    "--ioengine=io_uring", "--rw=write", "--bs=128k", "--iodepth=32",
                    f"--loops={loops}", "--output-format=json"], check=True, capture_output=True)
    try:
        if os.environ.get("SS"):
            steady(out, order, pts_window, lab, path, size, threads, qd, round_ms, fio_mem)
        else:
            rounds_turns(out, order, pts_window, lab, fio, rounds)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for words in sorted(not_on_device):
        print(f"pts_interleaved: warning: the lab's runs were {words}", file=sys.stderr)


def rounds_turns(out, order, pts_window, lab, fio, rounds):
    """The PTS rounds, the two tools taking turns on every point."""
    seen = []
    for r in range(1, rounds + 1):
        for i, (rd, bs) in enumerate(order):
            if (r + i) % 2 == 0:
                a = lab(rd, bs)
                b = fio(rd, bs)
            else:
                b = fio(rd, bs)
                a = lab(rd, bs)
            seen.append({"round": r, "read_pct": rd, "bs": bs, "lab_iops": a, "fio_iops": b,
                         "lab_first": (r + i) % 2 == 0})
        last = [s for s in seen if s["round"] == r]
        ratios = [s["fio_iops"] / s["lab_iops"] for s in last if s["lab_iops"] > 0]
        print(f"round {r}/{rounds}: fio/lab median {statistics.median(ratios):.3f}, "
              f"range {min(ratios):.2f}-{max(ratios):.2f} over {len(ratios)} points "
              f"(load {open('/proc/loadavg').read().split()[0]})", file=sys.stderr)
    json.dump(seen, open(f"{out}/fio/interleaved-rounds.json", "w"), indent=1)
    first = max(1, rounds - 4)
    rows = []
    with open(f"{out}/fio/interleaved.csv", "w") as f:
        f.write("point,lab_iops,fio_iops,fio_over_lab,pts_lab_iops,pts_over_lab\n")
        for rd, bs in order:
            w = [s for s in seen if s["round"] >= first and (s["read_pct"], s["bs"]) == (rd, bs)]
            lab_m = statistics.mean(s["lab_iops"] for s in w)
            fio_m = statistics.mean(s["fio_iops"] for s in w)
            q = pts_window.get((rd, bs))
            label = point_label(q, rd, bs)
            pts = q["stats"]["iops"] if q else float("nan")
            rows.append((label, fio_m / lab_m))
            f.write(f"{label},{lab_m:.0f},{fio_m:.0f},{fio_m / lab_m:.3f},{pts:.0f},{pts / lab_m:.3f}\n")
    inside = sum(0.9 <= x <= 1.1 for _, x in rows)
    far = max(rows, key=lambda r: abs(r[1] - 1))
    print(f"interleaved: {inside} of {len(rows)} points within 10 % (fio/lab 0.9-1.1); "
          f"furthest {far[0]} {far[1]:.3f}; {rounds} rounds, window = the last {rounds - first + 1}")


def steady(out, order, pts_window, lab, path, size, threads, qd, round_ms, fio_mem):
    """SS=1: every point to fio's own steady state, the lab alongside;
    PASSES=N goes over the matrix N times (each point's figures are the
    means over the passes; the tool that goes first alternates between
    passes too)."""
    jobs = f"{out}/fio/ss-jobs"
    os.makedirs(jobs, exist_ok=True)
    passes = int(os.environ.get("PASSES") or 1)
    # fio's steady-state window in round times (SS_DUR, default 5: the
    # PTS window); the lab's figure is the mean of as many of its last
    # intervals.
    ss_rounds = int(os.environ.get("SS_DUR") or 5)
    labels = {}
    for rd, bs in order:
        labels[(rd, bs)] = point_label(pts_window.get((rd, bs)), rd, bs)
        with open(f"{jobs}/{labels[(rd, bs)].replace('/', '-')}.fio", "w") as f:
            f.write(fio_global(path, size, fio_mem) + f"""[{labels[(rd, bs)].replace('/', '-')}]
rw=randrw
rwmixread={rd:g}
bs={bs}
numjobs={threads}
iodepth={qd}
time_based=1
runtime={max(25, 2 * ss_rounds) * round_ms}ms
ss=iops:20%
ss_dur={ss_rounds * round_ms}ms
""")

    def fio(rd, bs):
        job = f"{jobs}/{labels[(rd, bs)].replace('/', '-')}.fio"
        p = subprocess.run(["fio", "--output-format=json", job], check=True,
                           capture_output=True, text=True)
        j = json.loads(p.stdout)["jobs"][0]
        ss = j["steadystate"]
        return ss["data"]["iops_mean"], bool(ss["attained"]), int(j["elapsed"]) * 1000

    seen = []
    # A lab run that goes first lasts as long as fio's previous run (fio
    # stops when steady): the two tools then write about as much, and a
    # disk that slows down under sustained writes slows for both alike.
    last_ms = (ss_rounds + 1) * round_ms
    # BRACKET (default on): the lab runs just before and just after fio,
    # the second run as long as fio's; its figure is the mean of the two,
    # whose windows are then centred on fio's: a disk that drifts steadily
    # over the minute drifts out of the ratio.
    bracket = os.environ.get("BRACKET", "1") != "0"
    for n in range(passes):
        for i, (rd, bs) in enumerate(order):
            # Unbracketed, the lab goes first at every other point.
            lab_first = bracket or (i + n) % 2 == 0
            lab_after = bracket or not lab_first
            before = lab(rd, bs, last_ms, ss_rounds) if lab_first else None
            b, attained, ran_ms = fio(rd, bs)
            last_ms = max(ran_ms, ss_rounds * round_ms)
            after = lab(rd, bs, last_ms, ss_rounds) if lab_after else None
            runs = [x for x in (before, after) if x is not None]
            a = statistics.mean(runs)
            seen.append({"pass": n + 1, "read_pct": rd, "bs": bs, "lab_iops": a, "fio_iops": b,
                         "lab_before": before, "lab_after": after,
                         "fio_steady": attained, "fio_ms": ran_ms, "lab_first": lab_first})
            lab_words = (f"lab {before:.0f} / {after:.0f} before / after, mean {a:.0f}"
                         if len(runs) == 2 else f"lab {a:.0f}")
            print(f"pass {n + 1}/{passes} {labels[(rd, bs)]}: {lab_words}, fio {b:.0f} "
                  f"({'steady' if attained else 'not steady'} in {ran_ms / 1000:.0f} s), "
                  f"fio/lab {b / a:.3f}", file=sys.stderr)
    json.dump(seen, open(f"{out}/fio/interleaved-ss.json", "w"), indent=1)
    rows = []
    with open(f"{out}/fio/interleaved-ss.csv", "w") as f:
        f.write("point,lab_iops,fio_iops,fio_over_lab,fio_steady_passes,pts_lab_iops,pts_over_lab\n")
        for rd, bs in order:
            w = [x for x in seen if (x["read_pct"], x["bs"]) == (rd, bs)]
            a = statistics.mean(x["lab_iops"] for x in w)
            b = statistics.mean(x["fio_iops"] for x in w)
            steady_n = sum(x["fio_steady"] for x in w)
            q = pts_window.get((rd, bs))
            pts = q["stats"]["iops"] if q else float("nan")
            rows.append((labels[(rd, bs)], b / a, steady_n == len(w)))
            f.write(f"{labels[(rd, bs)]},{a:.0f},{b:.0f},{b / a:.3f},{steady_n},{pts:.0f},{pts / a:.3f}\n")
    inside = sum(0.9 <= x <= 1.1 for _, x, _ in rows)
    far = max(rows, key=lambda r: abs(r[1] - 1))
    how = "the lab before and after fio" if bracket else "the lab before or after fio, alternating"
    print(f"interleaved, fio to its own steady state, {how}, {passes} pass(es): {inside} of {len(rows)} "
          f"points within 10 % (fio/lab 0.9-1.1); furthest {far[0]} {far[1]:.3f}; fio steady "
          f"in every pass at {sum(r[2] for r in rows)} of {len(rows)}")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as e:
        err = (e.stderr or "").strip().splitlines() if isinstance(e.stderr, str) else []
        die(f"{' '.join(e.cmd[:2])} failed (exit {e.returncode})" + (f": {err[-1]}" if err else ""))
    except KeyboardInterrupt:
        die("interrupted")
