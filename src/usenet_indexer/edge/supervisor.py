"""``usenet-indexer edge --processes N``: one worker per process (a worker indexes on one core), a
crashed child's leases given back at once and the child restarted, SIGTERM passed on so each child
gives its range back.

``usenet-indexer run`` supervises its workers with the same function, giving each child its own node
token (``env_for``), its own log file (``output_for``) and its own process group (``detach``): a
terminal's Ctrl-C then reaches only the parent, which stops the workers first — they give their
ranges back to the coordinator — and the coordinator after them. Every child is told its parent's pid
(``SUPERVISOR_PID``) and stops when the parent is gone, so a killed supervisor leaves no worker
behind polling a coordinator that is not there.

A child that dies (issue 17): its leases are given back on its behalf as soon as it is seen gone —
exactly those its held-leases file names (edge/held.py), never "everything of this node", which
under ``edge --processes`` would take its siblings' — and it is restarted at once; one that keeps
dying waits longer each time. Before, its leases waited out the TTL and the restart waited 10 s: two
``kill -9`` of a worker made a one-million-header ``run`` take 150 s instead of 11. A grant whose
answer it had not read is found by the claim tag its file names for that request: the tag is revoked
and what was granted under it given back (leases/claims.py); under ``edge --processes`` such a grant
used to wait out the TTL (120 s by default). The give-back is edge/give_back.py's, which a worker
whose own lease request failed for good uses too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from usenet_indexer.edge.give_back import GivenBack, give_back, give_back_claimed, node_leases
from usenet_indexer.edge.held import HELD_FILE_VARIABLE, read_held
from usenet_indexer.edge.parent import PARENT_PID_VARIABLE
from usenet_indexer.logs import get_logger

if TYPE_CHECKING:
    # httpx with it (~30 ms of a core): `run`'s coordinator makes its first client when a child exits
    # (client_for), after its start.
    from usenet_indexer.edge.client import NodeClient

log = get_logger(__name__)

# The longest wait before restarting a child that keeps dying (seconds).
RESTART_DELAY_SECONDS = float(os.environ.get("EDGE_RESTART_DELAY", "10"))
# A child that ran this long before it died starts its count of crashes again.
STEADY_SECONDS = 60.0
POLL_SECONDS = 0.1  # how soon a dead child is seen
GIVE_BACK_RETRIES = 3  # a coordinator away for longer: the leases lapse after the TTL, as before


def restart_delay(crashes: int, cap: float = RESTART_DELAY_SECONDS) -> float:
    """Seconds before restarting a child that died ``crashes`` times in a row: none after the first
    (its leases are back already, so the work waits on the restart alone), then 0.5, 1, 2, … up to
    ``cap``, so that a child that dies at every start does not spin."""
    if crashes <= 1:
        return 0.0
    return float(min(cap, 0.5 * 2 ** (crashes - 2)))


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
    client_for: Callable[[int], NodeClient | None] | None = None,
    own_nodes: bool = False,
) -> int:
    """Run ``count`` children (``python -m usenet_indexer.edge`` with ``child_args``: edge/main.py)
    until ``stop``; with ``until_done`` (``--ranges``), a child that exits
    0 is done and not restarted. Returns the exit code.

    ``client_for(slot)``: a client with that child's node token, to give back the leases a child
    left when it exited (None: they lapse after the TTL; returning None: there is nothing to give back
    through, as when ``run``'s coordinator never served). ``own_nodes``: each child's node is its
    alone (``run``), so every live lease of that node is the dead child's — a grant it had not read
    yet too, which its file cannot name. After ``stop`` each child gets SIGTERM and
    is waited for; one still running ``grace_seconds`` later, or when ``kill`` is set (a second
    Ctrl-C), is killed and its leases given back. ``on_start(slot, pid)`` is told of every child
    started."""
    log.info("edge.supervisor", processes=count)
    children: dict[int, subprocess.Popen[bytes]] = {}
    started_at: dict[int, float] = {}
    crashes: dict[int, int] = {}
    restart_at: dict[int, float] = {}
    done: set[int] = set()
    held_dir = Path(tempfile.mkdtemp(prefix="usenet-indexer-held-"))

    def held_file(slot: int) -> Path:
        return held_dir / f"worker-{slot}.json"

    def start(slot: int) -> None:
        env = {**os.environ, **(env_for(slot) if env_for else {})}
        env["EDGE_CHILD"] = str(slot)
        env[PARENT_PID_VARIABLE] = str(os.getpid())
        env[HELD_FILE_VARIABLE] = str(held_file(slot))
        output = output_for(slot) if output_for else None
        children[slot] = subprocess.Popen(
            [sys.executable, "-m", "usenet_indexer.edge", *child_args],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT if output is not None else None,
            process_group=0 if detach else None,
        )
        started_at[slot] = time.monotonic()
        if on_start is not None:
            on_start(slot, children[slot].pid)

    def reclaim(slot: int, code: int | None) -> None:
        """What the child left held, given back on its behalf (it is gone: it cannot write again,
        and a request it sent before dying is fenced by the lease's epoch)."""
        path = held_file(slot)
        held = read_held(path)
        path.unlink(missing_ok=True)
        if client_for is None or not (held or own_nodes):
            return
        began = time.monotonic()
        try:
            reclaiming = client_for(slot)
            if reclaiming is None:
                return
            with reclaiming as client:
                given = give_back(client, held)
                for claim in sorted(held.claims):  # grants it asked for and never read
                    given += give_back_claimed(client, claim, reclaim=True) or GivenBack()
                if own_nodes:  # whatever else the node holds is this child's too
                    given += give_back(client, node_leases(client))
        except Exception as error:  # the supervisor goes on: the leases lapse after the TTL
            log.error("edge.give_back_failed", slot=slot, error=f"{type(error).__name__}: {error}")
            return
        if given == GivenBack():
            return  # it held nothing
        log.warning(
            "edge.leases_given_back",
            slot=slot,
            code=code,
            ranges_released=given.released,
            ranges_finished=given.finished,
            lanes=given.lanes,
            refused=given.refused,
            failed=given.failed,
            seconds=round(time.monotonic() - began, 3),
        )

    try:
        for slot in range(1, count + 1):
            start(slot)
        while not stop.is_set() and len(done) < count:
            for slot, child in list(children.items()):
                code = child.poll()
                if code is None:
                    continue
                del children[slot]
                reclaim(slot, code)
                if until_done and code == 0:
                    done.add(slot)
                    continue
                if time.monotonic() - started_at[slot] >= STEADY_SECONDS:
                    crashes[slot] = 0
                crashes[slot] = crashes.get(slot, 0) + 1
                delay = restart_delay(crashes[slot])
                log.warning(
                    "edge.child_exited", slot=slot, code=code, crashes=crashes[slot], restart_in=delay
                )
                restart_at[slot] = time.monotonic() + delay
            for slot, when in list(restart_at.items()):
                if time.monotonic() >= when:
                    del restart_at[slot]
                    start(slot)
            stop.wait(POLL_SECONDS)
        for child in children.values():
            child.send_signal(signal.SIGTERM)
        deadline = None if grace_seconds is None else time.monotonic() + grace_seconds
        failed = 0
        for slot, child in children.items():
            while child.poll() is None:
                if (kill is not None and kill.is_set()) or (
                    deadline is not None and time.monotonic() > deadline
                ):
                    log.warning("edge.child_killed", pid=child.pid)
                    child.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(0.1)
            reclaim(slot, child.returncode)  # one killed after the grace left its leases
            # Ended by our SIGTERM before it set its handler (a child restarted a moment before the
            # stop): it held nothing, or reclaim gave it back. Not a failure of the run.
            if child.returncode not in (0, -signal.SIGTERM):
                failed += 1
        return 1 if failed else 0
    finally:
        for path in held_dir.glob("*"):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            held_dir.rmdir()
