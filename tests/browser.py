"""A real headless Chromium for the page tests, driven through the DevTools protocol.

:func:`open_page` starts Debian's ``chromium`` (or ``chromium-browser``, ``google-chrome``)
headless with ``--remote-debugging-pipe``: commands go to the browser on its file descriptor
3 and answers come back on 4, JSON messages ended by a NUL byte (the Chrome DevTools
Protocol, Target/Page/Runtime/Log domains), so the standard library is enough.  It loads a
file, waits for its load event, and returns what the page did: every console message and
log entry of level error or warning (a Content-Security-Policy refusal is one), every
exception, the values of the JavaScript expressions asked for, and a full-page PNG
screenshot.  :func:`browser` is the executable, or None where there is none.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Seconds a browser may take to start, load the page and answer each command.
TIMEOUT = 60.0
STDERR = subprocess.DEVNULL
NAMES = ("chromium", "chromium-browser", "google-chrome")


def browser() -> str | None:
    return next((p for name in NAMES if (p := shutil.which(name))), None)


@dataclass
class Loaded:
    """What the page did: ``errors`` (console errors and warnings, log entries of level
    error, exceptions), ``values`` of the expressions, ``screenshot`` (PNG bytes)."""

    errors: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes = b""


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd = write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.read_fd], [], [], left)[0]:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._read_message(deadline))


def _errors(events: list[dict[str, Any]]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning"):
            out.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                              for a in p.get("args", [])))
        elif e.get("method") == "Runtime.exceptionThrown":
            out.append("exception: " + str(p.get("exceptionDetails", {}).get("text")))
        elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") in (
                "error", "warning"):
            out.append(f"log: {p['entry'].get('text')}")
    return out


def open_page(path: Path, expressions: dict[str, str], width: int = 1000) -> Loaded:
    """Load ``path`` in headless Chromium (module doc); ``expressions`` by name, evaluated
    after the load event (their values by value).  Raises ``RuntimeError``, ``TimeoutError``."""
    exe = browser()
    if exe is None:
        raise RuntimeError("no Chromium installed")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def wire() -> None:  # in the child: fd 3 reads commands, fd 4 writes answers
        # copied first: an original may be 3 or 4
        commands, answers = os.dup(to_browser_r), os.dup(from_browser_w)
        os.dup2(commands, 3)
        os.dup2(answers, 4)

    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.Popen(
            [exe, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             f"--user-data-dir={profile}", f"--window-size={width},800", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=STDERR,
            pass_fds=(3, 4), preexec_fn=wire)
        os.close(to_browser_r)
        os.close(from_browser_w)
        pipe = _Pipe(to_browser_w, from_browser_r)
        try:
            target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", targetId=target,
                                flatten=True)["sessionId"]
            for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
                pipe.call(domain, session)
            pipe.events.clear()
            pipe.call("Page.navigate", session, url=Path(path).resolve().as_uri())
            pipe.wait_for("Page.loadEventFired")
            loaded = Loaded()
            for name, expression in expressions.items():
                answer = pipe.call("Runtime.evaluate", session, expression=expression,
                                   returnByValue=True)
                loaded.values[name] = answer.get("result", {}).get("value")
            size = pipe.call("Page.getLayoutMetrics", session)["cssContentSize"]
            shot = pipe.call("Page.captureScreenshot", session, format="png",
                             captureBeyondViewport=True,
                             clip={"x": 0, "y": 0, "width": size["width"],
                                   "height": size["height"], "scale": 1})
            loaded.screenshot = base64.b64decode(shot["data"])
            loaded.errors = _errors(pipe.events)
            try:
                pipe.call("Browser.close")
            except (EOFError, RuntimeError, TimeoutError, OSError):
                pass
            return loaded
        finally:
            os.close(to_browser_w)
            os.close(from_browser_r)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
