"""Debian's chromium, headless, driven over the DevTools protocol (python3-websocket):
what a test needs to load a page, read it, click, answer a prompt and take a screenshot."""
import base64
import io
import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path

import websocket
from PIL import Image

CHROMIUM = "/usr/bin/chromium"


class Chromium:
    """One headless chromium with one page, window 1200x800 at scale 1."""

    def __init__(self, home: Path, width=1200, height=800):
        profile = home / "profile"
        self.log = open(home / "chromium.log", "w")
        self.proc = subprocess.Popen(
            # --disable-dev-shm-usage: a container's /dev/shm is too small for it
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run",
             "--no-default-browser-check", "--hide-scrollbars", f"--user-data-dir={profile}",
             "--remote-debugging-port=0", f"--window-size={width},{height}", "about:blank"],
            stdout=self.log, stderr=subprocess.STDOUT)
        port = self._port(profile / "DevToolsActivePort")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        # no Origin header: chromium refuses foreign origins unless told otherwise
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []
        self.replies = {}
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _port(self, path: Path, timeout=60.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"chromium exited with {self.proc.returncode}")
            if path.exists() and path.read_text().strip():
                return int(path.read_text().split()[0])
            time.sleep(0.1)
        raise AssertionError("chromium did not open its DevTools port")

    def _receive(self):
        msg = json.loads(self.ws.recv())
        if "id" in msg:
            self.replies[msg["id"]] = msg
        else:
            self.events.append(msg)

    def send(self, method: str, **params) -> int:
        """Send a command without waiting (a click that opens a prompt waits for it)."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        return self.next_id

    def reply(self, msg_id: int) -> dict:
        while msg_id not in self.replies:
            self._receive()
        msg = self.replies.pop(msg_id)
        if "error" in msg:
            raise AssertionError(f"DevTools: {msg['error']}")
        return msg["result"]

    def call(self, method: str, **params) -> dict:
        return self.reply(self.send(method, **params))

    def event(self, method: str) -> dict:
        """The first event of that name (waiting for it), taken from the queue."""
        while True:
            for e in self.events:
                if e["method"] == method:
                    self.events.remove(e)
                    return e["params"]
            self._receive()

    def errors(self) -> list:
        """Exceptions and console or log errors seen so far."""
        out = []
        for e in self.events:
            p = e["params"]
            if e["method"] == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"])
            elif e["method"] == "Runtime.consoleAPICalled" and p["type"] == "error":
                out.append(p["args"])
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"])
        return out

    def load(self, url: str):
        self.call("Page.navigate", url=url)
        self.event("Page.loadEventFired")

    def js(self, expression: str):
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise AssertionError(f"page script failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def click(self, x: float, y: float) -> int:
        """Press and release the left button at (x, y); returns the release's id, whose
        reply comes once what the click opened (a prompt) is answered."""
        common = {"x": x, "y": y, "button": "left", "clickCount": 1}
        self.call("Input.dispatchMouseEvent", type="mousePressed", **common)
        return self.send("Input.dispatchMouseEvent", type="mouseReleased", **common)

    def screenshot(self) -> Image.Image:
        # the whole page: a deep graph is taller than the window
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png",
                                          captureBeyondViewport=True)["data"])
        return Image.open(io.BytesIO(data)).convert("RGB")

    def close(self):
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


# what the widest frame of a name, its label and where it is on screen read in the page
FRAME_JS = """(() => {
  let best = null;
  for (const g of document.querySelectorAll("g.f")) {
    if (!g.querySelector("title").textContent.startsWith(%r + " (")) continue;
    const rect = g.querySelector("rect"), box = rect.getBoundingClientRect();
    const text = g.querySelector("text");
    const f = {x: box.x, y: box.y, w: box.width, h: box.height, fill: rect.getAttribute("fill"),
               label: text ? text.textContent : "", shown: g.getAttribute("display") !== "none",
               width: Number(rect.getAttribute("width"))};
    if (!best || f.width > best.width) best = f;
  }
  return best;
})()"""


def frame(page, name):
    f = page.js(FRAME_JS % name)
    assert f, f"no frame {name} in the page"
    return f


def rgb(fill):
    return tuple(int(v) for v in re.findall(r"\d+", fill))


def painted(image, f, fill, points=9):
    """Whether the frame's box shows its fill on screen: sampled along its top edge, where no
    label reaches (a label is black text inside)."""
    want = rgb(fill)
    y = int(f["y"] + 1.5)
    xs = [f["x"] + 2 + i * (f["w"] - 4) / (points - 1) for i in range(points)]
    hits = sum(all(abs(a - b) <= 3 for a, b in zip(image.getpixel((int(x), y)), want))
               for x in xs)
    return hits >= points - 1
