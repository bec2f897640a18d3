"""INN2 on loopback for tests and benchmarks: set it up (scripts/inn2-setup.sh), make groups, post.

Posting goes straight to innd's feed port with MODE STREAM and pipelined TAKETHIS (~18k articles/s,
several times faster than POST through nnrpd). innd files the articles into the group's overview at
once, so nnrpd readers see them as soon as the last 239 has come back.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path

from tests.support import tiers
from usenet_indexer.nntp import yenc

REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "inn2-setup.sh"

HOST = "127.0.0.1"
INND_PORT = 11190
PLAIN_PORT = 11119
AUTH_PORT = 11120
TLS_PORT = 11563
AUTH_USER = "indexer"
AUTH_PASSWORD = "indexer-secret"
TEST_DIR = Path(os.environ.get("INN2_TEST_DIR", "/var/lib/usenet-indexer-inn2"))
CA_FILE = TEST_DIR / "tls" / "ca.crt"
CTLINND = "/usr/lib/news/bin/ctlinnd"
NNRPD = "/usr/lib/news/bin/nnrpd"


class INN2Unavailable(RuntimeError):
    """INN2 could not be installed or started; the message carries the set-up script's output."""


def ensure_inn2(groups: Sequence[str] = ()) -> None:
    """Run the (idempotent) set-up script, creating ``groups``; raise INN2Unavailable on failure."""
    tiers.require("inn2")
    try:
        result = subprocess.run(
            ["bash", str(SETUP_SCRIPT), *groups], capture_output=True, text=True, timeout=900, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise INN2Unavailable(f"{SETUP_SCRIPT} could not run: {exc}") from exc
    if result.returncode != 0:
        raise INN2Unavailable(
            f"{SETUP_SCRIPT} failed (exit {result.returncode}); it needs root and Debian's inn2 package.\n"
            f"{result.stdout}\n{result.stderr}"
        )


def new_group(prefix: str = "alt.binaries.test") -> str:
    """Create a group with a unique name (ctlinnd newgroup) and return its name."""
    name = f"{prefix}.u{uuid.uuid4().hex[:12]}"
    create_group(name)
    return name


def create_group(name: str) -> None:
    tiers.require("inn2")
    result = subprocess.run(
        [CTLINND, "-t", "30", "newgroup", name, "y", "usenet-indexer-tests"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        raise INN2Unavailable(f"ctlinnd newgroup {name} failed: {result.stdout}{result.stderr}")


@dataclass(frozen=True, slots=True)
class Article:
    message_id: str
    subject: str
    poster: str
    body: bytes  # CRLF lines, not dot-stuffed
    date: str
    extra_headers: tuple[tuple[str, str], ...] = ()

    def wire(self, group: str) -> bytes:
        """The article as TAKETHIS sends it: headers, blank line, dot-stuffed body, terminator."""
        headers = [
            ("Path", "usenet-indexer-tests!not-for-mail"),
            ("From", self.poster),
            ("Newsgroups", group),
            ("Subject", self.subject),
            ("Message-ID", self.message_id),
            ("Date", self.date),
            *self.extra_headers,
        ]
        head = "".join(f"{key}: {value}\r\n" for key, value in headers).encode("utf-8")
        body = self.body if self.body.endswith(b"\r\n") else self.body + b"\r\n"
        if body.startswith(b"."):
            body = b"." + body
        body = body.replace(b"\r\n.", b"\r\n..")
        return head + b"\r\n" + body + b".\r\n"


def yenc_article(
    index: int,
    *,
    collection: str = "test.release",
    parts: int = 1,
    payload: bytes | None = None,
    poster: str = "poster@example.test",
) -> Article:
    """A small single-part yEnc article in the style of a binary post, with a unique message-id."""
    data = payload if payload is not None else (b"usenet-indexer test payload %d\n" % index) * 4
    name = f"{collection}.part{index:05d}.rar"
    body = yenc.encode(data, name, part=1, total=parts, begin=1, file_size=len(data))
    return Article(
        message_id=f"<{uuid.uuid4().hex}.{index}@usenet-indexer.test>",
        subject=f'[{index}/{parts}] - "{name}" yEnc (1/1)',
        poster=poster,
        body=body,
        date=format_datetime(datetime.now(UTC), usegmt=True),
    )


def post_articles(group: str, articles: Iterable[Article], *, batch: int = 500, timeout: float = 60.0) -> int:
    """Feed articles to innd with MODE STREAM + TAKETHIS; returns how many innd accepted (239).

    Raises RuntimeError when innd refuses streaming or rejects an article (the reason is in its 439).
    """
    tiers.require("inn2")
    accepted = 0
    with socket.create_connection((HOST, INND_PORT), timeout=timeout) as sock:
        reader = sock.makefile("rb")
        greeting = reader.readline()
        if not greeting.startswith(b"200"):
            raise RuntimeError(f"innd greeting on port {INND_PORT}: {greeting!r}")
        sock.sendall(b"MODE STREAM\r\n")
        answer = reader.readline()
        if not answer.startswith(b"203"):
            raise RuntimeError(f"innd refused MODE STREAM: {answer!r}")
        pending: list[Article] = []

        def flush() -> None:
            nonlocal accepted
            if not pending:
                return
            sock.sendall(
                b"".join(b"TAKETHIS " + a.message_id.encode() + b"\r\n" + a.wire(group) for a in pending)
            )
            for article in pending:
                line = reader.readline()
                if not line.startswith(b"239"):
                    raise RuntimeError(f"innd did not take {article.message_id}: {line!r}")
                accepted += 1
            pending.clear()

        for article in articles:
            pending.append(article)
            if len(pending) >= batch:
                flush()
        flush()
        sock.sendall(b"QUIT\r\n")
        reader.readline()
        reader.close()
    return accepted


def port_answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


class ReaderDaemon:
    """A test's own nnrpd reader daemon on ``port`` (as scripts/inn2-setup.sh starts the shared ones).

    It reads innd's spool and overview, so killing it and starting it again is what the clients of a
    restarted news server see: connections cut mid-reply, then refused, then accepted again, with the
    same articles. The shared readers (11119, 11120, 11563) are never touched: other tests and
    benchmarks use them at the same time.
    """

    def __init__(self, port: int, log: Path) -> None:
        self.port, self.log = port, log
        self.pid_file = Path(f"/run/news/nnrpd-{port}.pid")
        self.pgid: int | None = None

    def start(self, timeout: float = 20.0) -> None:
        self.pid_file.unlink(missing_ok=True)
        with self.log.open("ab") as out:
            # -D: a daemon that forks a child per connection; it calls setsid, so the daemon and
            # every child it forks share one process group, its pid (what kill() signals).
            subprocess.run(
                ["su", "news", "-s", "/bin/sh", "-c", f"{NNRPD} -D -n -4 {HOST} -p {self.port}"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
                timeout=timeout,
            )
        deadline = time.monotonic() + timeout
        while not (self.pid_file.exists() and port_answers(self.port)):
            if time.monotonic() > deadline:
                raise INN2Unavailable(f"nnrpd on port {self.port} did not start:\n{self.log.read_text()}")
            time.sleep(0.05)
        self.pgid = int(self.pid_file.read_text().split()[0])

    def kill(self, timeout: float = 20.0) -> int:
        """SIGKILL the daemon and every child serving a connection, at once; wait until none is left
        running (a zombie may linger: process 1 reaps slowly here) and the port refuses. Returns how
        many connections were being served (children alive just before the kill)."""
        assert self.pgid is not None, "kill() before start()"
        pgid, self.pgid = self.pgid, None
        serving = len(running_in_group(pgid)) - 1
        os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while running_in_group(pgid) or port_answers(self.port):
            if time.monotonic() > deadline:
                raise AssertionError(f"nnrpd's process group {pgid} (port {self.port}) outlived SIGKILL")
            time.sleep(0.05)
        self.pid_file.unlink(missing_ok=True)
        return serving

    def stop(self) -> None:
        if self.pgid is not None:
            self.kill()


def running_in_group(pgid: int) -> list[int]:
    """Pids of processes of group ``pgid`` that are not zombies (from /proc: ``kill -0`` succeeds on a
    zombie, so it cannot tell)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; split after the last ")".
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found
