"""Real processes for end-to-end tests: a coordinator and edge workers started as a user would."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@contextmanager
def reaped(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """``process``, killed and waited for if the test leaves it running (an assertion failed first).
    A Popen collected while its process runs warns, and with warnings as errors that fails whichever
    test is running then: in CI (stop 23) one failed kill test failed the next test too."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def environment(pid: int) -> dict[str, str]:
    """Process ``pid``'s environment ({} once it is gone)."""
    try:
        raw = (Path("/proc") / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if entry)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def supervised_by(pid: int) -> list[int]:
    """Processes started by the supervisor ``pid`` (``run``, ``edge --processes``: their environment
    names it), wherever they are now."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and environment(int(entry.name)).get("SUPERVISOR_PID") == str(pid):
            found.append(int(entry.name))
    return found


def child(supervisor: int, slot: int) -> int | None:
    """The pid of the supervisor's worker in ``slot`` (``EDGE_CHILD``; None while there is none)."""
    for pid in supervised_by(supervisor):
        if environment(pid).get("EDGE_CHILD") == str(slot):
            return pid
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def settings_env(database_url: str, data_dir: Path, **settings: object) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("USENET_INDEXER_", "COORDINATOR_", "NODE_"))
    }
    env["USENET_INDEXER_DATABASE_URL"] = database_url
    env["USENET_INDEXER_DATA_DIR"] = str(data_dir)
    env["USENET_INDEXER_LOG_FORMAT"] = "json"
    for key, value in settings.items():
        env[f"USENET_INDEXER_{key.upper()}"] = str(value)
    return env


class Coordinator:
    def __init__(self, env: dict[str, str], port: int, log: Path) -> None:
        self.env, self.port, self.log = env, port, log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process without waiting for it (several coordinators starting at once)."""
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "usenet_indexer", "serve", "--port", str(self.port)],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"coordinator did not start:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


class Worker:
    def __init__(self, env: dict[str, str], url: str, token: str, log: Path, *args: str) -> None:
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "usenet_indexer", "edge", *args],
                env={**env, "COORDINATOR_URL": url, "NODE_TOKEN": token},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def signal(self, sig: int) -> None:
        self.process.send_signal(sig)

    def stop(self, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)

    def output(self) -> str:
        return self.log.read_text(errors="replace")
