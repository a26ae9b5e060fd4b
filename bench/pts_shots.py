#!/usr/bin/env python3
"""Full-page screenshots of a `vsl pts` report with headless Chromium.

    bench/pts_shots.py REPORT_DIR OUT_DIR PREFIX [--width 1400] [--max-kb 400] [--parts DIR]

Opens REPORT_DIR/index.html and REPORT_DIR/<test>/index.html for every test
page there, in headless Chromium driven over its DevTools pipe (no extra
packages), and writes OUT_DIR/PREFIX-<page>.png: the whole page, WIDTH CSS
pixels wide, scaled down until the PNG is at most MAX_KB. Prints, per page,
its size (PNGs go through pngquant when it is installed) and what the browser reported as wrong: JavaScript exceptions,
console errors, images that did not load, and elements wider than the page.
Exits non-zero if any page had one of those.
"""

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

TESTS = ["iops", "throughput", "latency", "wsat", "hir", "xsr", "dirth", "ecw"]

CHECK_JS = """(() => {
  const broken = [...document.images]
    .filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src'));
  const w = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('svg, img, table, pre')]
    .filter(e => e.getBoundingClientRect().right > w + 1)
    .map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
      + ' ' + Math.round(e.getBoundingClientRect().right) + 'px');
  return JSON.stringify({broken, wide, title: document.title});
})()"""


class Browser:
    def __init__(self, width):
        self.tmp = tempfile.TemporaryDirectory()
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--hide-scrollbars", "--remote-debugging-pipe",
                f"--user-data-dir={self.tmp.name}", f"--window-size={width},2000",
                "about:blank"]
        # The DevTools pipe is fds 3 (commands in) and 4 (replies out).
        self.proc = subprocess.Popen(
            ["bash", "-c",
             f'exec chromium "$@" 3<&{cmd_r} 4>&{res_w}',
             "chromium", *args],
            pass_fds=(cmd_r, res_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.tmp.name, "stderr"), "w"))
        os.close(cmd_r)
        os.close(res_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _read(self):
        while b"\0" not in self.buf:
            chunk = os.read(self.res_r, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.cmd_w, json.dumps(m).encode() + b"\0")
        while True:
            r = self._read()
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError(f"{method}: {r['error']}")
                return r["result"]
            self.events.append(r)

    def wait_event(self, name, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    del self.events[i]
                    return e
            self.events.append(self._read())
        raise RuntimeError(f"no {name} in {timeout} s")

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        self.proc.wait(timeout=30)
        self.tmp.cleanup()


def quantize(png):
    """256-colour PNG through pngquant when installed (charts and text
    lose nothing visible; the file shrinks 3-4 times)."""
    try:
        r = subprocess.run(["pngquant", "--quality", "70-95", "--speed", "3", "-"],
                           input=png, capture_output=True, check=False)
    except FileNotFoundError:
        return png
    return r.stdout if r.returncode == 0 and r.stdout else png


def shoot(b, url, path, width, max_kb, parts_dir=None):
    tid = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = b.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
    for d in ("Page.enable", "Runtime.enable", "Log.enable"):
        b.call(d, session=s)
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": width, "height": 2000, "deviceScaleFactor": 1, "mobile": False}, session=s)
    b.events.clear()
    b.call("Page.navigate", {"url": url}, session=s)
    b.wait_event("Page.loadEventFired")
    time.sleep(0.5)
    problems = []
    for e in b.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            problems.append("exception: " + p["exceptionDetails"].get("text", ""))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            problems.append("console: " + p["entry"]["text"])
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            problems.append("console.error")
    def evaluate(expr):
        return b.call("Runtime.evaluate", {"expression": expr, "returnByValue": True},
                      session=s)["result"]["value"]
    # The pages' images load lazily: a viewport as tall as the page loads
    # them all; then wait (up to 30 s) until every one has finished.
    height = evaluate("Math.ceil(document.body.getBoundingClientRect().bottom"
                      " + parseFloat(getComputedStyle(document.body).marginBottom))")
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=s)
    end = time.time() + 30
    while time.time() < end and not evaluate("[...document.images].every(i => i.complete)"):
        time.sleep(0.2)
    chk = json.loads(evaluate(CHECK_JS))
    problems += [f"image not loaded: {x}" for x in chk["broken"]]
    problems += [f"wider than the page: {x}" for x in chk["wide"]]
    scale = 1.0
    while True:
        png = base64.b64decode(b.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": scale}},
            session=s)["data"])
        png = quantize(png)
        if len(png) <= max_kb * 1024 or scale < 0.45:
            break
        scale *= 0.85
    with open(path, "wb") as f:
        f.write(png)
    if parts_dir:
        # The same page in slices of 1800 CSS px, full scale, to read.
        stem = os.path.splitext(os.path.basename(path))[0]
        for i, y in enumerate(range(0, height, 1800)):
            part = base64.b64decode(b.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": y, "width": width, "height": min(1800, height - y),
                         "scale": 1}}, session=s)["data"])
            with open(os.path.join(parts_dir, f"{stem}.{i + 1}.png"), "wb") as f:
                f.write(part)
    b.call("Target.closeTarget", {"targetId": tid})
    return chk["title"], height, scale, len(png), problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("out")
    ap.add_argument("prefix")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--max-kb", type=int, default=400)
    ap.add_argument("--parts", metavar="DIR",
                    help="also write each page in 1800 px slices at full scale into DIR")
    a = ap.parse_args()
    report = os.path.abspath(a.report)
    if not os.path.isfile(os.path.join(report, "index.html")):
        sys.exit(f"{a.report}: no index.html (not a vsl pts report)")
    os.makedirs(a.out, exist_ok=True)
    if a.parts:
        os.makedirs(a.parts, exist_ok=True)
    pages = [("index", "index.html")] + [
        (t, f"{t}/index.html") for t in TESTS if os.path.isfile(os.path.join(report, t, "index.html"))]
    b = Browser(a.width)
    bad = 0
    try:
        for name, rel in pages:
            path = os.path.join(a.out, f"{a.prefix}-{name}.png")
            title, h, scale, size, problems = shoot(
                b, "file://" + os.path.join(report, rel), path, a.width, a.max_kb, a.parts)
            print(f"{path}: '{title}', page {a.width}x{h} CSS px, scale {scale:.2f}, "
                  f"{size // 1024} KB" + "".join(f"\n  PROBLEM {p}" for p in problems))
            bad += bool(problems)
    finally:
        b.close()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
