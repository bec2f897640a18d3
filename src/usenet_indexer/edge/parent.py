"""A supervised child's side of its supervisor (edge/supervisor.py): the parent's pid it was given
(``SUPERVISOR_PID``) and the watch that stops the child once that parent is gone.

Apart from the supervisor so that a worker does not import it (subprocess, tempfile, the restart and
give-back machinery, its dataclasses) for this one function: ~2 ms of each worker's start (issue 17,
docs/PERFORMANCE.md "Session 13: i17-imports").
"""

from __future__ import annotations

import os
import threading

from usenet_indexer.logs import get_logger

log = get_logger(__name__)

PARENT_PID_VARIABLE = "SUPERVISOR_PID"


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


__all__ = ["PARENT_PID_VARIABLE", "watch_parent"]
