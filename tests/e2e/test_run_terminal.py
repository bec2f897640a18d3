"""``run``'s live terminal view, read off a real terminal: ``run`` in a tmux pane (a pseudo-terminal, so
it draws the live view), the screen captured as text while it indexes the sample news server and when
it is done, then Ctrl-C typed into the pane. The screens are saved to ``test-artifacts/``."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.processes import settings_env
from usenet_indexer.local.run import worker_name
from usenet_indexer.newsservers.fake_server import Script
from usenet_indexer.newsservers.sample_server import SampleFeed, SampleServer, sample_groups

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SIZES = {
    "range_articles": 10_000,
    "chunk_articles": 2_000,
    "planner_period_seconds": 5,
    "probe_period_seconds": 1,
    "prefetch_idle_seconds": 0.3,
    "nntp_connections": 2,
}
RATE = re.compile(r"\d[\d,]*k?/s")


class Pane:
    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], env=env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "run")

    def dead(self) -> bool:
        return self.tmux("display-message", "-p", "-t", "run", "#{pane_dead}").strip() == "1"


@pytest.fixture
def pane() -> Iterator[Pane]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: apt-get install -y tmux (scripts/setup-system.sh)")
    socket = f"uitest-{uuid.uuid4().hex[:8]}"
    made = Pane(socket)
    try:
        yield made
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_the_live_view_on_a_terminal_and_ctrl_c(pane: Pane, tmp_path: Path) -> None:
    feed = SampleFeed(sample_groups(0.12), block_articles=int(SIZES["chunk_articles"]))
    with SampleServer(feed, script=Script(reply_delay=0.25)) as server:
        env = settings_env(f"sqlite:///{tmp_path / 'run.db'}", tmp_path / "data", **SIZES)
        env["TERM"] = "xterm-256color"
        for name in feed.groups:
            subprocess.run(
                [sys.executable, "-m", "usenet_indexer", "groups", "add", name, "--all-history"],
                env=env,
                check=True,
                capture_output=True,
            )
        command = shlex.join(
            [
                sys.executable,
                "-m",
                "usenet_indexer",
                "run",
                "--nntp-host=127.0.0.1",
                f"--nntp-port={server.port}",
                "--port=0",
                "--workers=2",
                "--batch-articles=2000",
            ]
        )
        # The exit status through a file: tmux 3.3 (here) sometimes leaves the exited process a zombie
        # for seconds, its pane "dead" without a status. The shell ignores SIGINT so that it lives to
        # write the status; `run` sets its own handler for Ctrl-C.
        status_file = tmp_path / "exit-status"
        command = f"trap '' INT; {command}; echo $? > {shlex.quote(str(status_file))}"
        pane.tmux("new-session", "-d", "-s", "run", "-x", "200", "-y", "50", command, env=env)
        pane.tmux("set-option", "-t", "run", "remain-on-exit", "on")

        screens: list[str] = []
        moving = None  # a screen drawn while articles were being read, with rates
        deadline = time.monotonic() + 120
        while True:
            screen = pane.screen()
            screens.append(screen)
            if "all caught up" in screen:
                break
            if moving is None and "history" in screen and RATE.search(screen.split("history", 1)[1]):
                moving = screen
            assert not pane.dead(), screen
            assert time.monotonic() < deadline, f"not caught up in time:\n{screen}"
            time.sleep(0.3)
        done = screen
        ARTIFACTS.mkdir(exist_ok=True)
        (ARTIFACTS / "run-terminal-done.txt").write_text(done)
        if moving is not None:
            (ARTIFACTS / "run-terminal-moving.txt").write_text(moving)

        # The live view: the header, a row per group with its history bar at 100 %, each worker.
        assert "web UI and newznab API at http://127.0.0.1:" in done
        assert "Ctrl-C stops" in done
        for name in feed.groups:
            row = next(line for line in done.splitlines() if name in line)
            assert "100%" in row and "up to date" in row, row
            count = feed.group(name)[0]  # type: ignore[index]
            assert (
                f"{feed.watermarks(name)[1] - feed.watermarks(name)[0] + 1:,}" in row or f"{count:,}" in row
            )
        for slot in (1, 2):
            assert worker_name(slot) in done
        assert "headers/s" in done and "releases" in done
        assert re.search(r"[\d,]+ articles read", done)
        assert "━" in done  # the progress bars are drawn
        assert moving is not None, "no screen showed articles/s while indexing:\n" + "\n----\n".join(
            screens[-5:]
        )

        # Ctrl-C typed into the terminal: the workers give their ranges back, run ends cleanly.
        pane.tmux("send-keys", "-t", "run", "C-c")
        deadline = time.monotonic() + 60
        while not status_file.exists() or not status_file.read_text().strip():
            assert time.monotonic() < deadline, pane.screen()
            time.sleep(0.2)
        final = pane.screen()
        (ARTIFACTS / "run-terminal-stopped.txt").write_text(final)
        assert status_file.read_text().strip() == "0", final
        assert re.search(r"[\d,]+ articles read in \d+ s", final), final
