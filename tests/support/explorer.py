"""A randomized explorer of the lease engine: seeded schedules of 3–6 actors, stepped one statement
at a time in a random order, with the database's clock moved past TTLs between steps; the lease audit
and the actors' own receipts are the oracle.

Each actor runs a small program of lease operations, the way a worker (one retrying its lease request
under its claim tag too), a lane worker, the planner, a loop of a second coordinator or the
finish-abandoned loop would (``PROGRAMS``). Every statement it
sends stops it (tests/support/interleave.py); the scheduler picks which paused actor sends its next
statement, so every schedule is one interleaving at statement boundaries, reproducible from its seed.

What must hold after every schedule:

- the audit finds nothing (leases/audit.py: one holder per range and lane, the group cap, batches
  and snapshots within the leases they were written under, contiguous batches, ranges tiling each
  group's planned span, no hole in a lane's snapshot chain);
- every batch an actor was told was stored is in the batch log, and nothing else is; the same for
  snapshots and lane claims: nothing answered as done went missing, nothing refused was kept;
- no operation failed other than by the refusals the engine promises (lease lost, stale batch, a
  range error, a fenced loop write).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.interleave import Actor, Interleaving, ScheduleError
from tests.support.store import query
from usenet_indexer.coordinator.registries.groups import GroupError
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database, Fenced
from usenet_indexer.leases.audit import audit
from usenet_indexer.leases.errors import LeaseLost, RangeError
from usenet_indexer.leases.ownership import OwnershipFence, OwnershipLeases
from usenet_indexer.leases.ranges import RangeLease

GROUPS = ("alt.binaries.explore.a", "alt.binaries.explore.b")
NODES = 6
# What a refusal looks like: the operation was told no, and must have changed nothing it was refused.
REFUSALS = (LeaseLost, RangeError, Fenced, GroupError)
# The tables a schedule writes, emptied before the next one.
TABLES = (
    "claims_revoked",
    "snapshot_log",
    "lane_log",
    "lease_log",
    "batch_log",
    "plain_chunks",
    "fetched_chunks",
    "probe_queue",
    "releases",
    "group_leases",
    "ownership_leases",
    "ranges",
    "nodes",
    "groups",
)


@dataclass
class Receipts:
    """What the actors were told was done."""

    batches: set[tuple[int, int, int]] = field(default_factory=set)  # (range, epoch, from)
    snapshots: set[tuple[int, str, int, int]] = field(default_factory=set)  # (group, lane, epoch, next)
    lanes: set[tuple[int, str, int]] = field(default_factory=set)  # (group, lane, epoch)
    grants: set[tuple[int, int, int]] = field(default_factory=set)  # (range, epoch, node)


@dataclass
class World:
    services: Services
    rng: random.Random
    nodes: list[int]
    groups: dict[str, int]
    receipts: Receipts
    ttl: float
    clock_moves: int = 0
    refusals: int = 0


Program = Callable[[World, random.Random, int], None]


REFUSED = object()
_world: World | None = None  # the schedule being run (one at a time), for counting refusals


def _refused(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``call``'s result, or REFUSED when the engine refused it."""
    try:
        return call(*args, **kwargs)
    except REFUSALS:
        if _world is not None:
            _world.refusals += 1
        return REFUSED


def _batches(world: World, rng: random.Random, lease: RangeLease, node: int) -> int:
    """Some batches of ``lease`` from its resume point, with a heartbeat now and then; where it got."""
    ranges = world.services.ranges
    at = lease.next
    for _ in range(rng.randint(1, 3)):
        if at > lease.end:
            break
        if rng.random() < 0.3 and _refused(ranges.heartbeat, lease.range_id, node, lease.epoch) is REFUSED:
            return at
        to = min(lease.end, at + rng.randint(0, lease.end - lease.start))
        epoch = lease.epoch if rng.random() > 0.1 else lease.epoch - 1  # now and then a stale one
        receipt = _refused(
            ranges.commit_batch, lease.range_id, node, epoch, at, to, rng.randint(0, to - at + 1)
        )
        if receipt is REFUSED:
            return at
        if not receipt.replayed:
            world.receipts.batches.add((lease.range_id, epoch, at))
        at = to + 1
    return at


def worker(world: World, rng: random.Random, node: int) -> None:
    """A plain range lease: batches, then a finish, a release, a corrupt report, or silence."""
    ranges = world.services.ranges
    lease = ranges.lease(node)
    if lease is None:
        return
    world.receipts.grants.add((lease.range_id, lease.epoch, node))
    at = _batches(world, rng, lease, node)
    end = rng.random()
    if at > lease.end or end < 0.3:
        _refused(ranges.finish, lease.range_id, node, lease.epoch)
    elif end < 0.55:
        _refused(ranges.release, lease.range_id, node, lease.epoch)
    elif end < 0.7:
        _refused(ranges.corrupt, lease.range_id, node, lease.epoch, rng.randint(lease.start, lease.end))
    # else: silent, as a worker that died


def retrying_worker(world: World, rng: random.Random, node: int) -> None:
    """A worker whose lease request is sent again under its claim tag (its answers lost: a retry is
    answered with the grant it made, leases/claims.py), then works the range, or gives up: revokes the
    tag and gives back what the revoke finds (edge/give_back.py), while the grant may lapse and be taken
    over meanwhile (issue 17)."""
    ranges = world.services.ranges
    claim = f"{rng.getrandbits(128):032x}"
    lease = None
    for _ in range(rng.randint(1, 3)):
        lease = ranges.lease(node, claim)
        if lease is not None:
            world.receipts.grants.add((lease.range_id, lease.epoch, node))
    if rng.random() < 0.5:
        found = world.services.claims.revoke(node, claim)
        for range_id, epoch in found.ranges:
            _refused(ranges.release, range_id, node, epoch, claim=claim)
        return
    if lease is not None:
        at = _batches(world, rng, lease, node)
        if at > lease.end:
            _refused(ranges.finish, lease.range_id, node, lease.epoch)
        else:
            _refused(ranges.release, lease.range_id, node, lease.epoch)


def lane_worker(world: World, rng: random.Random, node: int) -> None:
    """A group lane: claim, its next ranges in order with a snapshot before each batch, then a release
    or a flush of its window."""
    lanes, ranges = world.services.lanes, world.services.ranges
    lane = rng.choice(("history", "tail"))
    held = lanes.lease(node, lane)
    if held is None:
        return
    world.receipts.lanes.add((held.group_id, lane, held.epoch))
    for _ in range(rng.randint(1, 2)):
        lease = _refused(lanes.next, held.group_id, node, lane, held.epoch)
        if lease is None or lease is REFUSED:
            break
        world.receipts.grants.add((lease.range_id, lease.epoch, node))
        standing = lease.end + 1
        location = f"snapshots/{held.group_id}/{lane}-{standing}-e{held.epoch}"
        recorded = _refused(
            lanes.record_snapshot,
            held.group_id,
            node,
            lane,
            held.epoch,
            next=standing,
            size=1,
            location=location,
        )
        if recorded is REFUSED:
            if rng.random() < 0.8:
                _refused(ranges.release, lease.range_id, node, lease.epoch)  # what edge/lanes.py does
                return
        else:
            world.receipts.snapshots.add((held.group_id, lane, held.epoch, standing))
        # Posted even after a refused snapshot now and then, as a buggy or hostile worker would.
        receipt = _refused(ranges.commit_batch, lease.range_id, node, lease.epoch, lease.next, lease.end, 0)
        if receipt is REFUSED:
            return
        if not receipt.replayed:
            world.receipts.batches.add((lease.range_id, lease.epoch, lease.next))
        _refused(ranges.finish, lease.range_id, node, lease.epoch)
    if rng.random() < 0.5:
        _refused(lanes.release, held.group_id, node, lane, held.epoch)
    elif rng.random() < 0.5:
        at = rng.randint(1, 1_000)
        _refused(
            lanes.flush,
            held.group_id,
            node,
            lane,
            held.epoch,
            next=at,
            size=0,
            location=f"snapshots/{held.group_id}/{lane}-{at}-e{held.epoch}-flushed",
            store=lambda tx, row: None,
        )


def planner(world: World, rng: random.Random, node: int) -> None:
    """A plan of one group from new watermarks (the CLI, or a coordinator's planner)."""
    name = rng.choice(list(world.groups))
    group = world.services.groups.get(name)
    high = int(group["high_water"] or 0) + rng.choice((0, 40, 150, 260))
    _refused(world.services.groups.plan, name, 1, max(1, high))


def retirer(world: World, rng: random.Random, node: int) -> None:
    """The planner's retirement of ranges below a risen low watermark."""
    group_id = world.groups[rng.choice(list(world.groups))]
    low = rng.randint(1, 500)
    with world.services.db.transaction() as tx:
        tx.run("ranges_retire", {"group_id": group_id, "low": low, "reason": f"retired: low watermark {low}"})


def loop(world: World, rng: random.Random, node: int) -> None:
    """A coordinator's planner loop: claim the loop, plan under its fence, renew, plan again."""
    ownership = OwnershipLeases(
        world.services.db, f"coordinator-{node}", ttl_seconds=world.ttl, renew_seconds=world.ttl / 3
    )
    if not ownership.acquire("planner").ok:
        return
    fence = OwnershipFence(ownership, "planner")
    for _ in range(2):
        name = rng.choice(list(world.groups))
        group = world.services.groups.get(name)
        high = int(group["high_water"] or 0) + rng.choice((0, 70, 200))
        if _refused(world.services.groups.plan, name, 1, max(1, high), fence=fence) is REFUSED:
            return
        if not ownership.renew("planner"):
            return


def reaper(world: World, rng: random.Random, node: int) -> None:
    """The finish-abandoned loop."""
    world.services.ranges.finish_abandoned()


PROGRAMS: tuple[tuple[Program, float], ...] = (
    (worker, 4.0),
    (retrying_worker, 1.5),
    (lane_worker, 2.0),
    (planner, 1.0),
    (retirer, 0.5),
    (loop, 1.0),
    (reaper, 0.5),
)


@dataclass
class Outcome:
    seed: int
    steps: int
    problems: list[str]
    refusals: int = 0  # operations the engine refused (lease lost, stale, fenced, …)
    blocks: int = 0  # steps after which an actor waited on another's lock
    clock_moves: int = 0


def wipe(db: Database) -> None:
    if db.dialect == "postgresql":
        query(db, f"TRUNCATE {', '.join(TABLES)} RESTART IDENTITY CASCADE")
    else:
        with db.transaction() as tx:
            for table in TABLES:
                tx.sql(f"DELETE FROM {table}")
            if tx.sql("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'"):
                tx.sql("DELETE FROM sqlite_sequence")


def prepare(services: Services, seed: int) -> World:
    wipe(services.db)
    rng = random.Random(seed)
    groups = {}
    for name in GROUPS:
        groups[name] = services.groups.add(name)
        services.groups.plan(name, 1, rng.choice((150, 250, 399)))
    nodes = [services.nodes.add(f"explorer-{n}")[0] for n in range(NODES)]
    return World(services, rng, nodes, groups, Receipts(), services.settings.lease_ttl_seconds)


def run_schedule(services: Services, script: Interleaving, seed: int, max_steps: int = 400) -> Outcome:
    """One schedule: its actors stepped in the seed's order to their ends; the oracle's findings."""
    global _world
    world = _world = prepare(services, seed)
    rng = world.rng
    blocks = 0
    programs, weights = zip(*PROGRAMS, strict=True)
    actors: list[Actor] = []
    script.reset()
    for index in range(rng.randint(3, 6)):
        program = rng.choices(programs, weights)[0]
        node = world.nodes[index % len(world.nodes)]
        actors.append(
            script.spawn(f"{program.__name__}-{index}", program, world, random.Random(rng.random()), node)
        )
    steps = 0
    while True:
        live = [a for a in actors if not a.done]
        if not live:
            break
        if steps >= max_steps:
            script.free_all(live)  # let everything run out
            break
        paused = [a for a in live if a.state == "paused"]
        if not paused:
            # Every live actor waits on a lock (or is between statements): a deadlock the database
            # breaks, or a lock about to be let go.
            script.wait_any(live)
            continue
        if rng.random() < 0.05:
            services.db.move_clock(world.ttl * rng.choice((0.4, 0.7, 1.05)))
            world.clock_moves += 1
        script.step(rng.choice(paused))
        script.settle(live)
        blocks += any(a.state == "blocked" for a in live)
        steps += 1
    problems: list[str] = []
    for actor in actors:
        if actor.error is not None and not isinstance(actor.error, REFUSALS):
            problems.append(f"{actor.name} failed: {type(actor.error).__name__}: {actor.error}")
    report = audit(services.db, ttl=world.ttl, max_per_group=services.settings.max_leases_per_group)
    problems.extend(report.problems)
    problems.extend(_receipts(services.db, world.receipts))
    return Outcome(seed, steps, problems, world.refusals, blocks, world.clock_moves)


def _receipts(db: Database, receipts: Receipts) -> list[str]:
    problems: list[str] = []
    logged = {
        (int(r["range_id"]), int(r["epoch"]), int(r["from_id"])) for r in query(db, "SELECT * FROM batch_log")
    }
    if logged != receipts.batches:
        problems.append(
            f"batches told stored but not logged: {sorted(receipts.batches - logged)}; "
            f"logged but refused: {sorted(logged - receipts.batches)}"
        )
    snapshots = {
        (int(r["group_id"]), str(r["lane"]), int(r["epoch"]), int(r["next"]))
        for r in query(db, "SELECT * FROM snapshot_log")
    }
    # A flush's snapshot is logged too, and a flush says nothing back: only what was told must be there.
    if missing := receipts.snapshots - snapshots:
        problems.append(f"snapshots told recorded but not logged: {sorted(missing)}")
    lanes = {
        (int(r["group_id"]), str(r["lane"]), int(r["epoch"])) for r in query(db, "SELECT * FROM lane_log")
    }
    if lanes != receipts.lanes:
        problems.append(f"lane claims told {sorted(receipts.lanes)}, logged {sorted(lanes)}")
    grants = {
        (int(r["range_id"]), int(r["epoch"]), int(r["node_id"])) for r in query(db, "SELECT * FROM lease_log")
    }
    if grants != receipts.grants:
        problems.append(f"grants told {sorted(receipts.grants)}, logged {sorted(grants)}")
    return problems


@dataclass
class Exploration:
    schedules: int = 0
    steps: int = 0
    refusals: int = 0
    blocks: int = 0
    clock_moves: int = 0
    failures: list[Outcome] = field(default_factory=list)

    def __str__(self) -> str:
        return (
            f"{self.schedules} schedules, {self.steps} steps, {self.refusals} refusals, "
            f"{self.blocks} steps ending with an actor blocked, {self.clock_moves} clock moves, "
            f"{len(self.failures)} failed"
        )


def explore(services: Services, seeds: range, *, budget_seconds: float | None = None) -> Exploration:
    """Run the schedules of ``seeds`` (within ``budget_seconds``)."""
    script = Interleaving(services.db)
    found = Exploration()
    began = time.monotonic()
    try:
        for seed in seeds:
            if budget_seconds is not None and time.monotonic() - began > budget_seconds:
                break
            try:
                outcome = run_schedule(services, script, seed)
            except ScheduleError as error:
                outcome = Outcome(seed, 0, [f"schedule stuck: {error}"])
            found.schedules += 1
            found.steps += outcome.steps
            found.refusals += outcome.refusals
            found.blocks += outcome.blocks
            found.clock_moves += outcome.clock_moves
            if outcome.problems:
                found.failures.append(outcome)
    finally:
        script.close()
    return found
