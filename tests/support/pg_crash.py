"""A private PostgreSQL cluster that a test may crash: Debian's initdb and pg_ctl, on a loopback port
and a temporary directory, stopped with ``pg_ctl stop -m immediate`` (no shutdown checkpoint: the
next start runs crash recovery from the WAL on disk).

``wal_writer_delay`` is at its maximum (10 s), so a commit made with ``synchronous_commit off`` stays
in the WAL buffers (shared memory) until the WAL writer's next round, and ``hold_wal_writer`` stops
the WAL writer outright: a crash in that window really loses the commit, and no timer tick decides
whether a test proves anything. autovacuum is off and checkpoints far apart, so that no background
commit flushes the WAL past it either.

initdb refuses to run as root: as root the cluster belongs to the ``postgres`` user (runuser).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.support import tiers

BIN = Path(os.environ.get("USENET_INDEXER_PG_BIN", "/usr/lib/postgresql/15/bin"))
SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "wal_writer_delay": "10000",  # ms, the maximum
    "autovacuum": "off",
    "checkpoint_timeout": "3600",
    "max_wal_size": "1GB",
    "wal_level": "minimal",  # no standby snapshots logged by the background writer
    "max_wal_senders": "0",
    "fsync": "on",
    "synchronous_commit": "on",
}


class PrivateCluster:
    def __init__(self, root: Path, owner: str | None) -> None:
        self.root = root
        self.data = root / "data"
        self.log = root / "server.log"
        self.owner = owner
        self.port = _free_port()

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*(["runuser", "-u", self.owner, "--"] if self.owner else []), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr or done.stdout}")
        return done

    def init(self) -> None:
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync")

    def start(self) -> None:
        options = " ".join(f"-c {k}={v}" for k, v in {**SETTINGS, "port": str(self.port)}.items())
        options += f" -c unix_socket_directories={self.root}"
        self._run(
            str(BIN / "pg_ctl"), "start", "-D", str(self.data), "-w", "-l", str(self.log), "-o", options
        )

    def crash(self) -> None:
        """``pg_ctl stop -m immediate``: every server process quits at once, nothing is flushed. A
        WAL writer held stopped gets SIGKILL (a stopped process acts on no other signal), after the
        postmaster was told to quit."""
        held = self._held
        self._run(str(BIN / "pg_ctl"), "stop", "-D", str(self.data), "-m", "immediate", "-W")
        if held is not None:
            os.kill(held, signal.SIGKILL)
            self._held = None
        deadline = time.monotonic() + 60
        while (self.data / "postmaster.pid").exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the crashed cluster in {self.data} did not exit within 60 s")
            time.sleep(0.05)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(BIN / "pg_ctl"), "stop", "-D", str(self.data), "-m", "fast", "-w")

    _held: int | None = None

    @contextmanager
    def hold_wal_writer(self) -> Iterator[int]:
        """Stop the WAL writer (SIGSTOP) until the crash: an asynchronous commit made meanwhile is in
        shared memory only. Yields its pid."""
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'").fetchone()
        if row is None:
            raise RuntimeError("no walwriter process in pg_stat_activity")
        pid = int(row[0])
        os.kill(pid, signal.SIGSTOP)
        self._held = pid
        try:
            yield pid
        finally:
            if self._held is not None:  # not crashed: let it run again
                os.kill(pid, signal.SIGCONT)
                self._held = None

    def server_log(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    tiers.require("postgres")
    if not (BIN / "initdb").exists():
        raise RuntimeError(f"no initdb in {BIN}: install postgresql-15 or set USENET_INDEXER_PG_BIN")
    owner = "postgres" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="uitest-pgcrash-"))
    if owner is not None:
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    cluster = PrivateCluster(root, owner)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
