"""Headless Chromium for the UI tests: one-shot `--dump-dom` / `--screenshot` runs, and a small DevTools
session (over aiohttp's websocket client, an MLflow dependency) for what needs a click."""
from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--virtual-time-budget=10000",
         "--window-size=1600,1000"]
CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> Optional[str]:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def one_shot(binary: str, url: str, *action: str, timeout: float = 120) -> str:
    """Run chromium once with the standard flags plus `action` (--dump-dom, --screenshot=...); its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run([binary, *FLAGS, f"--user-data-dir={profile}", *action, url], capture_output=True,
                              text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


class DevTools:
    """A page driven over the DevTools protocol: navigate, evaluate JavaScript, wait, screenshot."""

    def __init__(self, binary: str, url: str):
        self._profile = tempfile.mkdtemp(prefix="chromium-")
        flags = [f for f in FLAGS if not f.startswith("--virtual-time-budget")]  # it would end the session
        self._proc = subprocess.Popen([binary, *flags, f"--user-data-dir={self._profile}",
                                       "--remote-debugging-port=0", url],
                                      stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._connect())

    async def _connect(self) -> None:
        import aiohttp

        endpoint = None
        for line in self._proc.stderr:
            found = re.search(r"DevTools listening on ws://([^/]+)/", line)
            if found:
                endpoint = found.group(1)
                break
        if endpoint is None:
            raise RuntimeError(f"chromium did not start its DevTools endpoint (exit {self._proc.poll()})")
        self._http = aiohttp.ClientSession()
        for _ in range(100):  # the page target appears shortly after the endpoint
            targets = await (await self._http.get(f"http://{endpoint}/json/list")).json()
            pages = [t for t in targets if t["type"] == "page" and t.get("webSocketDebuggerUrl")]
            if pages:
                break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError(f"chromium opened no page: {targets}")
        self._ws = await self._http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self._next_id = 0

    async def _call(self, method: str, session: Optional[str] = None, **params: Any) -> dict:
        """One DevTools command; `session`: a target attached with `frame_session` (else the page)."""
        self._next_id += 1
        call_id = self._next_id
        message = {"id": call_id, "method": method, "params": params, **({"sessionId": session} if session else {})}
        await self._ws.send_str(json.dumps(message))
        while True:
            received = await self._ws.receive()
            if not isinstance(received.data, str):
                raise RuntimeError(f"{method}: the DevTools connection closed (chromium exit {self._proc.poll()})")
            message = json.loads(received.data)
            if message.get("id") == call_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression: str) -> Any:
        result = self._loop.run_until_complete(self._call("Runtime.evaluate", expression=expression,
                                                          returnByValue=True, awaitPromise=True))
        return result["result"].get("value")

    def frame_session(self, url_prefix: str) -> Optional[str]:
        """A session on the page's iframe whose URL starts with `url_prefix` (Chromium runs a sandboxed iframe
        in its own process: a target of its own, which the page's evaluate does not reach); None if none."""
        targets = self._loop.run_until_complete(self._call("Target.getTargets"))["targetInfos"]
        found = [t for t in targets if t["type"] == "iframe" and t["url"].startswith(url_prefix)]
        if not found:
            return None
        return self._loop.run_until_complete(self._call("Target.attachToTarget", targetId=found[0]["targetId"],
                                                        flatten=True))["sessionId"]

    def evaluate_in(self, session: str, expression: str) -> Any:
        result = self._loop.run_until_complete(self._call("Runtime.evaluate", session=session, expression=expression,
                                                          returnByValue=True, awaitPromise=True))
        return result["result"].get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.3)
        raise AssertionError(f"the page never showed {what}; it shows:\n{self.text()[:3000]}")

    def screenshot(self, path: Path) -> Path:
        result = self._loop.run_until_complete(self._call("Page.captureScreenshot", format="png"))
        path.write_bytes(base64.b64decode(result["data"]))
        return path

    def close(self) -> None:
        async def shut() -> None:
            await self._ws.close()
            await self._http.close()

        try:
            self._loop.run_until_complete(shut())
        finally:
            self._loop.close()
            self._proc.terminate()
            try:
                self._proc.wait(15)
            except subprocess.TimeoutExpired:
                self._proc.kill()
            shutil.rmtree(self._profile, ignore_errors=True)


def artifacts_dir(tmp_path: Path) -> Path:
    """Where screenshots go: $HARNESS_TEST_ARTIFACTS (CI keeps it) or the test's tmp folder."""
    folder = Path(os.environ.get("HARNESS_TEST_ARTIFACTS") or tmp_path / "artifacts") / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
