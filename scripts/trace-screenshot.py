#!/usr/bin/env python3
"""Screenshot a `--time-trace` file in chrome://tracing's viewer.

Usage: scripts/trace-screenshot.py TRACE.json OUT.png --catapult DIR
           [--size 1600x900] [--select NAME]

The viewer is catapult's Trace-Viewer, the web app that `chrome://tracing`
is built from: `DIR/tracing/bin/trace2html` (from a checkout of
https://chromium.googlesource.com/catapult) turns the trace into one
self-contained HTML page, which headless Chromium (Debian's `chromium`)
opens. Chromium is driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: NUL-terminated JSON on fds 3 and 4, so no
WebSocket library is needed); the page is shot once the viewer has
finished importing. With `--select NAME`, the first slice of that name
is selected first, so the panel below shows its arguments (its task).

Exits 1 with one line on standard error when an input is missing, the
viewer fails, or Chromium does not answer.
"""

import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

CHROMIUM = "/usr/lib/chromium/chromium"  # the binary behind Debian's wrapper


def fail(message):
    print(f"trace-screenshot: error: {message}", file=sys.stderr)
    sys.exit(1)


class DevTools:
    """A DevTools-protocol session with a Chromium started on a pipe."""

    def __init__(self, width, height):
        cmd_r, self.cmd_w = os.pipe()
        self.res_r, res_w = os.pipe()

        def child_fds():
            # Chromium reads commands on fd 3 and writes replies on fd 4.
            a, b = os.dup(cmd_r), os.dup(res_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.profile = tempfile.mkdtemp(prefix="trace-screenshot.")
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", "--remote-debugging-pipe",
                f"--window-size={width},{height}", "about:blank"]
        self.proc = subprocess.Popen(args, close_fds=False, preexec_fn=child_fds,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(res_w)
        self.buf = b""
        self.next_id = 0
        self.session = None

    def call(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        try:
            os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            fail("chromium exited before it answered")
        while True:
            while b"\0" not in self.buf:
                chunk = os.read(self.res_r, 1 << 16)
                if not chunk:
                    fail(f"chromium closed the DevTools pipe during {method}")
                self.buf += chunk
            raw, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    fail(f"{method}: {reply['error'].get('message')}")
                return reply["result"]

    def eval(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close", session=False)
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            shutil.rmtree(self.profile, ignore_errors=True)


# Selects the first slice named NAME, through the viewer's own selection
# (as a click on it would), so the panel below shows its arguments; true
# when there was one.
SELECT_SLICE = """
(() => {
  const view = document.querySelector('tr-ui-timeline-view');
  for (const thread of view.model.getAllThreads()) {
    const slice = thread.sliceGroup.slices.find(s => s.title === %s);
    if (slice) {
      view.brushingStateController.changeSelectionFromTimeline(new tr.model.EventSet([slice]));
      return true;
    }
  }
  return false;
})()
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--catapult", required=True, help="a checkout of catapult")
    ap.add_argument("--size", default="1600x900")
    ap.add_argument("--select", metavar="NAME", help="select the first slice of this name")
    a = ap.parse_args()
    width, height = (int(n) for n in a.size.split("x"))
    trace2html = os.path.join(a.catapult, "tracing", "bin", "trace2html")
    for path, what in ((a.trace, "trace"), (trace2html, "catapult's trace2html"), (CHROMIUM, "chromium")):
        if not os.path.exists(path):
            fail(f"{path}: no such file ({what})")
    with tempfile.TemporaryDirectory() as tmp:
        html = os.path.join(tmp, "trace.html")
        done = subprocess.run([sys.executable, trace2html, a.trace, f"--output={html}"],
                              capture_output=True, text=True)
        if done.returncode != 0:
            fail(f"trace2html failed: {done.stderr.strip().splitlines()[-1:]}")
        png = screenshot(html, width, height, a.select)
    tmp_out = a.out + ".tmp"
    with open(tmp_out, "wb") as f:
        f.write(png)
    os.replace(tmp_out, a.out)


def screenshot(html, width, height, select):
    dt = DevTools(width, height)
    try:
        target = dt.call("Target.createTarget", {"url": "file://" + os.path.abspath(html)})
        dt.session = dt.call("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True})["sessionId"]
        # The importer runs in steps; it is done when its dialog is gone
        # and the timeline holds tracks.
        ready = ("!!document.querySelector('tr-ui-timeline-view') && "
                 "!document.body.innerText.includes('Importing') && "
                 "document.querySelector('tr-ui-timeline-view').trackView !== undefined")
        deadline = time.monotonic() + 60
        while not dt.eval(ready):
            if time.monotonic() > deadline:
                fail("the viewer did not finish importing the trace within 60 s")
            time.sleep(0.25)
        time.sleep(0.5)
        if select:
            if not dt.eval(SELECT_SLICE % json.dumps(select)):
                fail(f"no slice named {select!r} in the trace")
            time.sleep(0.5)
        shot = dt.call("Page.captureScreenshot", {"format": "png"})
        return base64.b64decode(shot["data"])
    finally:
        dt.close()


if __name__ == "__main__":
    main()
