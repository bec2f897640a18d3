"""NZBGet, the downloader, in server mode in a temporary folder and driven over its JSON-RPC, with the
INN2 of tests/support/inn2.py as its news server (the end-to-end tests give it an NZB's ``t=get`` link
and compare what it writes with the files posted)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.support import inn2 as support
from tests.support import tiers

__all__ = ["NZBGet", "wait_for_entries", "wait_for_history"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NZBGet:
    """NZBGet in server mode in a temporary folder, driven over its JSON-RPC."""

    def __init__(self, folder: Path, **overrides: str) -> None:
        """``overrides``: options to set otherwise than below (e.g. ``ParRename="yes"``)."""
        tiers.require("nzbget")
        self.folder = folder
        self.port = free_port()
        self.config = folder / "nzbget.conf"
        options = {
            "MainDir": str(folder),
            "DestDir": "${MainDir}/complete",
            "InterDir": "${MainDir}/intermediate",
            "NzbDir": "${MainDir}/nzb",
            "QueueDir": "${MainDir}/queue",
            "TempDir": "${MainDir}/tmp",
            "ScriptDir": "${MainDir}/scripts",
            "LockFile": "${MainDir}/nzbget.lock",
            "LogFile": "${MainDir}/nzbget.log",
            "WebDir": "",
            "ConfigTemplate": "",
            "OutputMode": "log",
            "ControlIP": "127.0.0.1",
            "ControlPort": str(self.port),
            "ControlUsername": "nzbget",
            "ControlPassword": "roundtrip",
            "Server1.Active": "yes",
            "Server1.Name": "inn2",
            "Server1.Level": "0",
            "Server1.Host": support.HOST,
            "Server1.Port": str(support.PLAIN_PORT),
            "Server1.Encryption": "no",
            "Server1.Connections": "4",
            "Server1.JoinGroup": "yes",
            "CrcCheck": "yes",
            "ParCheck": "force",  # verify the PAR2 set even when every article arrived
            "ParRepair": "yes",
            "ParRename": "no",
            "DirectRename": "no",
            "Unpack": "no",
            "ParCleanupQueue": "no",
            "HealthCheck": "delete",
            "DupeCheck": "no",
            **overrides,
        }
        self.config.write_text("".join(f"{k}={v}\n" for k, v in options.items()))
        self.process = subprocess.Popen(
            ["nzbget", "-c", str(self.config), "-s"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        self.rpc_url = f"http://127.0.0.1:{self.port}/jsonrpc"
        deadline = time.monotonic() + 20
        while True:
            try:
                self.call("version")
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError(f"nzbget did not start; its log:\n{self.log()}") from None
                time.sleep(0.2)

    def call(self, method: str, *params: Any) -> Any:
        response = httpx.post(
            self.rpc_url,
            json={"method": method, "params": list(params)},
            auth=("nzbget", "roundtrip"),
            timeout=10,
        )
        response.raise_for_status()
        body = response.json()
        if body.get("error"):
            raise RuntimeError(f"nzbget {method}: {body['error']}")
        return body["result"]

    def log(self) -> str:
        path = self.folder / "nzbget.log"
        return path.read_text(errors="replace") if path.exists() else "(no log)"

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.call("shutdown")
                self.process.wait(20)
            except (httpx.HTTPError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait(10)


def wait_for_history(nzbget: NZBGet, timeout: float = 120.0) -> dict[str, Any]:
    """The first download NZBGet finished (whether it succeeded or not)."""
    return wait_for_entries(nzbget, 1, timeout)[0]


def wait_for_entries(nzbget: NZBGet, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
    """NZBGet's history once ``count`` downloads are in it (finished, whether they succeeded or not)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        history: list[dict[str, Any]] = nzbget.call("history", False)
        if len(history) >= count:
            return history
        time.sleep(0.5)
    raise AssertionError(
        f"NZBGet finished fewer than {count} downloads in {timeout} s; queue {nzbget.call('listgroups', 0)}\n"
        f"{nzbget.log()}"
    )
