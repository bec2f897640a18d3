"""``usenet-indexer edge --processes N``: one worker per process (a worker indexes on one core), a
crashed child restarted after a delay, SIGTERM passed on so each child gives its range back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from usenet_indexer.logs import get_logger

log = get_logger(__name__)

RESTART_DELAY_SECONDS = float(os.environ.get("EDGE_RESTART_DELAY", "10"))


def supervise(count: int, child_args: Sequence[str], *, stop: threading.Event, until_done: bool) -> int:
    """Run ``count`` children until ``stop``; with ``until_done`` (``--ranges``), a child that exits
    0 is done and not restarted. Returns the exit code."""
    log.info("edge.supervisor", processes=count)
    children: dict[int, subprocess.Popen[bytes]] = {}
    restart_at: dict[int, float] = {}
    done: set[int] = set()

    def start(slot: int) -> None:
        env = {**os.environ, "EDGE_CHILD": str(slot)}
        children[slot] = subprocess.Popen([sys.executable, "-m", "usenet_indexer", *child_args], env=env)

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
    failed = 0
    for child in children.values():
        if child.wait() != 0:
            failed += 1
    return 1 if failed else 0
