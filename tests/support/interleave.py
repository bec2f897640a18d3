"""Driving lease operations through chosen interleavings, at statement boundaries, on both dialects.

Each **actor** is a thread running one operation (``RangeLeases.commit_batch``, ``Groups.plan``, …).
Through the store's test hook (``Database.hook``, db/database.py) an actor stops before every
statement it sends (``BEGIN``, each named query, ``COMMIT``) and waits there until the test lets it
go on. Everything it sent before has been executed by the server by then (the pipeline is synced),
so its locks are held as they would be at that point in production. The test decides who moves:

    script = Interleaving(db)
    a = script.spawn("A", ranges.commit_batch, ...)
    script.run(a, until="range_advance")   # A stops before its range_advance
    db.move_clock(ttl + 1)                  # A's lease expires while it waits
    b = script.spawn("B", ranges.lease, other_node)
    script.finish(b)                        # B runs to its end (or blocks on A's locks)
    script.finish(a)

An actor that waits on a lock is **blocked**: seen on PostgreSQL in ``pg_stat_activity`` (its
backend waits on a ``Lock``), on SQLite by the hook's ``blocked`` (its ``BEGIN IMMEDIATE`` waits for
the write lock). ``run`` and ``step`` return then, with the actor still waiting; it stops at its next
statement once the lock is free.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg

from usenet_indexer.db import Database

WAIT_SECONDS = 30.0  # an actor that neither stops, ends nor blocks within this is a bug in the test


class ScheduleError(AssertionError):
    pass


@dataclass
class Actor:
    name: str
    thread: threading.Thread | None = None
    # "new", "running", "paused", "blocked", "done"
    state: str = "new"
    at: str | None = None  # the statement it stopped before
    statements: list[str] = field(default_factory=list)  # every statement it stopped before
    result: Any = None
    error: BaseException | None = None
    backend_pid: int | None = None
    go: threading.Event = field(default_factory=threading.Event)
    sqlite_blocked: bool = False
    free: bool = False  # let go for good: it no longer stops

    @property
    def done(self) -> bool:
        return self.state == "done"

    def outcome(self) -> Any:
        """The operation's result; its exception raised again."""
        if self.state != "done":
            raise ScheduleError(f"actor {self.name} has not ended (it is {self.state} at {self.at})")
        if self.error is not None:
            raise self.error
        return self.result


class Interleaving:
    def __init__(self, db: Database, admin_url: str | None = None) -> None:
        self.db = db
        self._changed = threading.Condition()
        self._local = threading.local()
        self._actors: list[Actor] = []
        self._watch: psycopg.Connection[Any] | None = None
        self._slots: list[_Slot] = []
        if db.dialect == "postgresql":
            self._watch = psycopg.connect(admin_url or db.url, autocommit=True)
        db.hook = self

    def close(self) -> None:
        for actor in self._actors:
            if actor.state in ("paused", "running", "blocked"):
                self._release(actor, forever=True)
        self._wait_done(self._actors)
        for slot in self._slots:
            slot.work.put(None)
        for slot in self._slots:
            if slot.thread is not None:
                slot.thread.join(WAIT_SECONDS)
        self.db.hook = None
        if self._watch is not None:
            self._watch.close()

    # -- the hook (called on actors' threads) ------------------------------------------------------

    def before(self, statement: str, backend_pid: int | None) -> None:
        actor: Actor | None = getattr(self._local, "actor", None)
        if actor is None or actor.free:
            return  # not an actor (the test's own queries), or one let run to its end
        with self._changed:
            actor.state = "paused"
            actor.at = statement
            actor.backend_pid = backend_pid
            actor.sqlite_blocked = False
            actor.statements.append(statement)
            actor.go.clear()
            self._changed.notify_all()
        actor.go.wait()
        with self._changed:
            actor.state = "running"

    def blocked(self) -> None:
        actor: Actor | None = getattr(self._local, "actor", None)
        if actor is None:
            return
        with self._changed:
            if not actor.sqlite_blocked:
                actor.sqlite_blocked = True
                self._changed.notify_all()

    def unblocked(self) -> None:
        actor: Actor | None = getattr(self._local, "actor", None)
        if actor is None:
            return
        with self._changed:
            actor.sqlite_blocked = False
            if actor.state == "blocked":
                actor.state = "running"

    # -- the test's side ---------------------------------------------------------------------------

    def spawn(self, name: str, operation: Callable[..., Any], *args: Any, **kwargs: Any) -> Actor:
        """A new actor, started and stopped before its first statement (or ended, if it sends none).

        Actors run on threads kept between schedules (a thread each at a time): on SQLite every thread
        has a connection of its own, and a thread per actor left thousands open."""
        actor = Actor(name)

        def body() -> None:
            self._local.actor = actor
            try:
                actor.result = operation(*args, **kwargs)
            except BaseException as error:
                actor.error = error
            finally:
                self._local.actor = None
            with self._changed:
                actor.state = "done"
                actor.at = None
                self._changed.notify_all()

        self._actors.append(actor)
        with self._changed:
            actor.state = "running"
        actor.thread = self._thread_for(body)
        self._settle(actor)
        return actor

    def _thread_for(self, body: Callable[[], None]) -> threading.Thread:
        """An idle kept thread, given ``body`` to run (a new one if none is idle)."""
        with self._changed:
            for slot in self._slots:
                if slot.idle:
                    slot.idle = False
                    slot.work.put(body)
                    assert slot.thread is not None  # an idle slot has run before
                    return slot.thread
            slot = _Slot(len(self._slots))
            self._slots.append(slot)
            slot.idle = False
            slot.work.put(body)
        slot.thread = threading.Thread(
            target=self._serve, args=(slot,), name=f"actor-{slot.index}", daemon=True
        )
        slot.thread.start()
        return slot.thread

    def _serve(self, slot: _Slot) -> None:
        while (body := slot.work.get()) is not None:
            body()
            with self._changed:
                slot.idle = True
                self._changed.notify_all()

    def step(self, actor: Actor) -> Actor:
        """Let ``actor`` send the statement it stopped before; return when it stops before its next
        one, ends, or blocks on a lock. A blocked actor is waited for again, without a new step."""
        if actor.state == "paused":
            self._release(actor)
        elif actor.state not in ("blocked", "running"):
            raise ScheduleError(f"actor {actor.name} cannot step: it is {actor.state}")
        self._settle(actor)
        return actor

    def run(self, actor: Actor, until: str | None = None, *, occurrence: int = 1) -> Actor:
        """Step ``actor`` until it stops before ``until`` (its ``occurrence``-th time there), ends or
        blocks; without ``until``, to its end (or a block)."""
        seen = sum(1 for s in actor.statements if s == until) if until else 0
        while not actor.done:
            if actor.state == "paused" and until is not None and actor.at == until and seen >= occurrence:
                return actor
            self.step(actor)
            if actor.state == "blocked":
                return actor
            if actor.state == "paused" and actor.at == until:
                seen += 1
        if until is not None:
            raise ScheduleError(
                f"actor {actor.name} ended without reaching {until} (it sent {actor.statements})"
            )
        return actor

    def finish(self, actor: Actor) -> Any:
        """Run ``actor`` to its end (it must not block) and return its outcome."""
        self.run(actor)
        if not actor.done:
            raise ScheduleError(f"actor {actor.name} is blocked before its end (at {actor.at})")
        return actor.outcome()

    def wait(self, actor: Actor) -> Actor:
        """After another actor freed what ``actor`` was blocked on: until it stops, ends or blocks again."""
        self._settle(actor)
        return actor

    def free(self, actor: Actor) -> Actor:
        """Let ``actor`` run to its end without stopping again (it may wait on locks meanwhile:
        whatever it waits for must not be a paused actor); its outcome is ``actor.outcome()``."""
        self._release(actor, forever=True)
        deadline = time.monotonic() + WAIT_SECONDS
        with self._changed:
            while not actor.done:
                if not self._changed.wait(0.05) and time.monotonic() > deadline:
                    raise ScheduleError(f"actor {actor.name} did not end within {WAIT_SECONDS} s")
        return actor

    def settle(self, actors: list[Actor]) -> None:
        """After a step: every actor marked blocked that is no longer waiting on a lock is waited for
        until it stops, ends or blocks again, so that the next choice sees where each one is."""
        for actor in actors:
            if actor.state != "blocked":
                continue
            still = (
                actor.sqlite_blocked if actor.backend_pid is None else self._waits_on_lock(actor.backend_pid)
            )
            if not still:
                with self._changed:
                    if actor.state == "blocked":
                        actor.state = "running"
                self._settle(actor)

    def wait_any(self, actors: list[Actor], timeout: float = WAIT_SECONDS) -> None:
        """Until one of ``actors`` stops before a statement or ends (every one of them was blocked)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not any(a.state in ("paused", "done") for a in actors):
                if not self._changed.wait(0.05) and time.monotonic() > deadline:
                    names = ", ".join(f"{a.name} at {a.at}" for a in actors)
                    raise ScheduleError(f"no actor moved within {timeout} s: {names}")

    def free_all(self, actors: list[Actor]) -> None:
        """Let every one of ``actors`` run to its end, then wait for them all."""
        for actor in actors:
            self._release(actor, forever=True)
        for actor in actors:
            self.free(actor)

    def reset(self) -> None:
        """Forget the actors of the last schedule (every one of them has ended)."""
        self._wait_done(self._actors)
        with self._changed:
            deadline = time.monotonic() + WAIT_SECONDS
            while not all(slot.idle for slot in self._slots):  # their threads free for the next
                if not self._changed.wait(0.01) and time.monotonic() > deadline:
                    raise ScheduleError("an actor's thread did not come back")
        self._actors.clear()

    def _wait_done(self, actors: list[Actor]) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        with self._changed:
            while not all(a.done for a in actors):
                if not self._changed.wait(0.05) and time.monotonic() > deadline:
                    raise ScheduleError("actors did not end")

    # -- internals -------------------------------------------------------------------------------

    def _release(self, actor: Actor, forever: bool = False) -> None:
        with self._changed:
            if actor.done:
                return  # ended meanwhile (``free_all`` frees each again): marked running, it never ends
            actor.free = actor.free or forever
            actor.state = "running"
            actor.go.set()

    def _settle(self, actor: Actor) -> None:
        """Wait until ``actor`` is paused, done or blocked."""
        deadline = time.monotonic() + WAIT_SECONDS
        polls = 0
        while True:
            with self._changed:
                if actor.state in ("paused", "done"):
                    return
                if actor.sqlite_blocked:
                    actor.state = "blocked"
                    return
                if self._changed.wait(0.001 if polls == 0 else 0.003):
                    continue  # some actor moved: look again
            polls += 1
            # Asked without holding the condition: actors stopping meanwhile must not wait on us.
            if actor.backend_pid is not None and self._waits_on_lock(actor.backend_pid):
                with self._changed:
                    if actor.state == "running":
                        actor.state = "blocked"
                    return
            if time.monotonic() > deadline:
                raise ScheduleError(
                    f"actor {actor.name} neither stopped, ended nor blocked within {WAIT_SECONDS} s "
                    f"(after {actor.at})"
                )

    def _waits_on_lock(self, pid: int) -> bool:
        assert self._watch is not None
        row = self._watch.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        return row is not None and row[0] == "Lock"


# -- PostgreSQL's one-statement grant, stopped inside --------------------------------------------

# Where ``lease_take`` is made to wait, after its tag's advisory lock: at the node's last-seen update,
# after the grant's own writes (the node's row held by the test, its last_seen_at set back so that the
# update is due); or at the revoked-tags check, before anything is read (the table locked by the test).
INSIDE = {
    "after the grant": (
        "UPDATE nodes SET last_seen_at = last_seen_at - 3600 WHERE id = %(node)s",
        "SELECT 1 FROM nodes WHERE id = %(node)s FOR UPDATE",
    ),
    "at the revoked check": (None, "LOCK TABLE claims_revoked IN ACCESS EXCLUSIVE MODE"),
}


@contextmanager
def stopped_inside(db: Database, node: int, where: str) -> Iterator[None]:
    """While open, a PostgreSQL ``lease_take`` of ``node`` (a range grant in one statement) that
    reaches ``where`` waits there on a lock the test holds in a transaction of its own, holding what
    it took before (its claim tag's advisory lock; after the grant, the range's row): the statement
    boundaries inside the one statement, as a slow grant reaches them. An actor running it is seen
    blocked; it goes on once this closes."""
    backdate_node, hold = INSIDE[where]
    with psycopg.connect(db.url) as holder:
        if backdate_node is not None:
            holder.execute(backdate_node, {"node": node})
            holder.commit()
        holder.execute(hold, {"node": node})
        yield
        holder.rollback()


def waits_on(db: Database, actor: Actor) -> str | None:
    """What a blocked actor's backend waits on (``advisory``, ``transactionid``, ``relation``, …)."""
    with psycopg.connect(db.url, autocommit=True) as watch:
        row = watch.execute(
            "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (actor.backend_pid,)
        ).fetchone()
    return None if row is None else str(row[0])


@dataclass
class _Slot:
    """A kept thread, and what it runs next (None: end)."""

    index: int
    thread: threading.Thread | None = None
    idle: bool = True
    work: queue.Queue[Callable[[], None] | None] = field(default_factory=queue.Queue)
