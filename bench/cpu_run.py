#!/usr/bin/env python3
"""Runs one benchmark command and reports its IOPS and the CPU time it used.

usage: cpu_run.py ours|fio JSON_PATH -- COMMAND...

`ours`: COMMAND is a `vsl run --json JSON_PATH ...`; the I/O count and IOPS
come from that file. `fio`: COMMAND is fio with `--output-format=json`; its
standard output is saved to JSON_PATH and read from there.

Prints one line: IOPS, I/O count, CPU seconds (user + system of the whole
process and every thread it had, io_uring workers included, as wait4 reports
them), CPU microseconds per I/O, mean latency in microseconds (fio: its
`lat`, submission to completion; ours: issue to reap), and for ours whether
the run was measured on the device (1/0; fio: -). Exits non-zero, with the
tool's error, if the command fails.
"""
import json
import resource
import subprocess
import sys


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--" or sys.argv[1] not in ("ours", "fio"):
        sys.exit("usage: cpu_run.py ours|fio JSON_PATH -- COMMAND...")
    kind, path, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if kind == "fio":
        with open(path, "wb") as f:
            f.write(p.stdout)
        job = json.loads(p.stdout)["jobs"][0]
        ios = job["read"]["total_ios"] + job["write"]["total_ios"]
        iops = job["read"]["iops"] + job["write"]["iops"]
        lat_us = sum(job[d]["lat_ns"]["mean"] * job[d]["total_ios"]
                     for d in ("read", "write")) / max(ios, 1) / 1e3
        measured = "-"
    else:
        with open(path) as f:
            j = json.load(f)
        s = j["summary"]
        ios, iops, lat_us = s["ios"], s["iops"], s["lat_avg_us"]
        v = j.get("measured_on_device")
        measured = "-" if v is None else str(int(v["measured"]))
    if ios <= 0:
        sys.exit(f"{cmd[0]} completed no I/O")
    print(f"{iops:.0f} {ios} {cpu_s:.3f} {cpu_s / ios * 1e6:.3f} {lat_us:.2f} {measured}")


if __name__ == "__main__":
    main()
