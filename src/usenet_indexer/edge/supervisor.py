"""``usenet-indexer edge --processes N``: one worker per process (a worker indexes on one core), a
crashed child restarted after a delay, SIGTERM passed on so each child gives its range back.

``usenet-indexer run`` supervises its workers with the same function, giving each child its own node
token (``env_for``), its own log file (``output_for``) and its own process group (``detach``): a
terminal's Ctrl-C then reaches only the parent, which stops the workers first — they give their
ranges back to the coordinator — and the coordinator after them. Every child is told its parent's pid
(``SUPERVISOR_PID``) and stops when the parent is gone, so a killed supervisor leaves no worker
behind polling a coordinator that is not there.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO

from usenet_indexer.logs import get_logger

log = get_logger(__name__)

RESTART_DELAY_SECONDS = float(os.environ.get("EDGE_RESTART_DELAY", "10"))
PARENT_PID_VARIABLE = "SUPERVISOR_PID"


def supervise(
    count: int,
    child_args: Sequence[str],
    *,
    stop: threading.Event,
    until_done: bool,
    env_for: Callable[[int], Mapping[str, str]] | None = None,
    output_for: Callable[[int], IO[bytes] | None] | None = None,
    detach: bool = False,
    grace_seconds: float | None = None,
    kill: threading.Event | None = None,
    on_start: Callable[[int, int], None] | None = None,
) -> int:
    """Run ``count`` children until ``stop``; with ``until_done`` (``--ranges``), a child that exits
    0 is done and not restarted. Returns the exit code.

    After ``stop`` each child gets SIGTERM and is waited for; one still running ``grace_seconds``
    later, or when ``kill`` is set (a second Ctrl-C), is killed (its lease then expires after the
    TTL: nothing stored is lost). ``on_start(slot, pid)`` is told of every child started."""
    log.info("edge.supervisor", processes=count)
    children: dict[int, subprocess.Popen[bytes]] = {}
    restart_at: dict[int, float] = {}
    done: set[int] = set()

    def start(slot: int) -> None:
        env = {**os.environ, **(env_for(slot) if env_for else {})}
        env["EDGE_CHILD"] = str(slot)
        env[PARENT_PID_VARIABLE] = str(os.getpid())
        output = output_for(slot) if output_for else None
        children[slot] = subprocess.Popen(
            [sys.executable, "-m", "usenet_indexer", *child_args],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT if output is not None else None,
            process_group=0 if detach else None,
        )
        if on_start is not None:
            on_start(slot, children[slot].pid)

    for slot in range(1, count + 1):
        start(slot)
    while not stop.is_set() and len(done) < count:
        for slot, child in list(children.items()):
            code = child.poll()
            if code is None:
                continue
            del children[slot]
            if until_done and code == 0:
                done.add(slot)
                continue
            log.warning("edge.child_exited", slot=slot, code=code, restart_in=RESTART_DELAY_SECONDS)
            restart_at[slot] = time.monotonic() + RESTART_DELAY_SECONDS
        for slot, when in list(restart_at.items()):
            if time.monotonic() >= when:
                del restart_at[slot]
                start(slot)
        stop.wait(0.2)
    for child in children.values():
        child.send_signal(signal.SIGTERM)
    deadline = None if grace_seconds is None else time.monotonic() + grace_seconds
    failed = 0
    for child in children.values():
        while child.poll() is None:
            if (kill is not None and kill.is_set()) or (deadline is not None and time.monotonic() > deadline):
                log.warning("edge.child_killed", pid=child.pid)
                child.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(0.1)
        if child.returncode != 0:
            failed += 1
    return 1 if failed else 0


def watch_parent(stop: threading.Event) -> None:
    """In a supervised child (an edge worker, ``demo``'s sample server): set ``stop`` once the parent
    that started us is gone."""
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if not expected:
        return

    def watch() -> None:
        while not stop.wait(1.0):
            if str(os.getppid()) != expected:
                log.warning("edge.parent_gone", parent=expected, action="stopping")
                stop.set()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
