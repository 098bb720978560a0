"""A minimal W3C WebDriver client for chromedriver (plain HTTP on loopback through httpx, no
selenium): headless Chromium 1280 px wide. Shared by the browser tests
(tests/report/test_html_browser.py and those importing its ``WebDriver``, which skips where
Chromium is missing) and bench/chart_pictures.py (the docs' pictures)."""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
from pathlib import Path

import httpx

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = "chromium/chromedriver not installed (Debian: apt-get install -y chromium chromium-driver)"


class WebDriver:
    """One chromedriver process and one browser session (``profile``: its user data folder)."""

    def __init__(self, profile: Path) -> None:
        if CHROMIUM is None or CHROMEDRIVER is None:
            raise RuntimeError(MISSING)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        self.proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"{self.base}/status", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    raise
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--no-first-run", f"--user-data-dir={profile}",
                "--window-size=1280,1000", "--hide-scrollbars"]}}}}
        self.session = self._call("POST", "/session", caps)["sessionId"]

    def _call(self, method: str, path: str, body: dict | None = None):
        url = self.base + path if path == "/session" else f"{self.base}/session/{self.session}{path}"
        r = httpx.request(method, url, json=body, timeout=90)
        value = r.json()["value"]
        if r.status_code != 200:
            raise RuntimeError(f"webdriver {method} {path}: {value}")
        return value

    def open(self, path: Path) -> None:
        """Load a local file."""
        self.go(path.as_uri())

    def go(self, url: str) -> None:
        self._call("POST", "/url", {"url": url})

    def run(self, script: str):
        return self._call("POST", "/execute/sync", {"script": script, "args": []})

    def wait_ok(self, timeout: float = 30) -> None:
        """Until the page's script has marked ``<body data-ok="1">`` (RuntimeError after
        ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        while self.run("return document.body && document.body.getAttribute('data-ok')") != "1":
            if time.monotonic() > deadline:
                raise RuntimeError("the page did not finish (no data-ok=\"1\")")
            time.sleep(0.1)

    def console(self) -> list[dict]:
        return self._call("POST", "/se/log", {"type": "browser"})

    def screenshot(self, height: int) -> bytes:
        """The window (1280 px wide, ``height`` high) as PNG bytes."""
        self._call("POST", "/window/rect", {"width": 1280, "height": height})
        return base64.b64decode(self._call("GET", "/screenshot"))

    def element_png(self, css: str) -> bytes:
        """The first element matching ``css`` as PNG bytes."""
        found = self._call("POST", "/element", {"using": "css selector", "value": css})
        eid = next(iter(found.values()))
        return base64.b64decode(self._call("GET", f"/element/{eid}/screenshot"))

    def close(self) -> None:
        try:
            self._call("DELETE", "")
        finally:
            self.proc.terminate()
            self.proc.wait(timeout=30)
