"""The grouping round against a cross-post's batch (issue 16), at statement boundaries, on both stores.

Group A's copy of a posting is stored: per-file random releases (loose releases of the catalog) and
fully random ones (loose runs), every article cross-posted to B (other numbers, one message-id, an
Xref naming both). Then the grouping round (``Grouper.run_once``) and B's batch of the same articles
run at once, stopped before each of their statements (tests/support/interleave.py): every point at
which one stops while the other runs as far as it can, and seeded random schedules. After each, the
rounds a grouping loop would run next.

The oracle: the catalog equals the one the two writers leave one after the other (one release per set
of articles, every group listed), each message-id in one release, each release's figures those of
its blob, no alias to a release that is not there, and no loose run left.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.interleave import Actor, Interleaving
from tests.support.obfuscated import plan_random, post_random
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Database
from usenet_indexer.indexing import Batch, RangeIndexer, default_rules, unpack_segments
from usenet_indexer.indexing.sample import Article, chunk_text, overview_line

GROUPS = ("alt.binaries.grouping.a", "alt.binaries.grouping.b")
OFFSET = 50_000  # B numbers its copy of article n as n + OFFSET
TABLES = ("probe_queue", "release_aliases", "loose_runs", "releases")
SCHEDULES = 12  # random ones, besides every stop point of each writer

Catalog = list[tuple[str, tuple[str, ...], frozenset[str]]]  # (groups, file names, message-ids)


def posting(seed: int = 3) -> list[Article]:
    """Two posters' releases, half per-file random, half under fully random subjects, in both groups."""
    rng = random.Random(seed)
    planned = plan_random(rng, 8, posters=("one@example.com", "two@example.com"), max_files=4, max_parts=3)
    planned = [replace(r, named=False) for r in planned]
    fully = {r for r in range(len(planned)) if r % 2}
    articles = []
    for a in post_random(planned, rng, group=GROUPS[0], first=1).posting.articles:
        if a.release in fully:
            a = replace(a, subject="".join(rng.choices(string.ascii_letters + string.digits, k=24)))
        articles.append(replace(a, groups=GROUPS))
    return articles


def batch_of(articles: list[Article], group: str) -> Batch:
    """The worker of ``group``: its copy of the articles, one batch."""
    shift = OFFSET if group == GROUPS[1] else 0
    first, last = articles[0].number + shift, articles[-1].number + shift
    lines = [
        overview_line(a, number=a.number + shift, numbers=(a.number, a.number + OFFSET)) for a in articles
    ]
    indexer = RangeIndexer(group, first, last, first, default_rules())
    indexer.add_text(chunk_text(lines), last + 1)
    indexer.finish()
    return indexer.take()


def catalog(db: Database) -> Catalog:
    """The releases as sets of message-ids, with their groups and file names; checked as read."""
    rows = query(db, "SELECT * FROM releases")
    out = []
    seen: set[str] = set()
    for row in rows:
        files = unpack_segments(bytes(row["segments"]))
        mids = [m for f in files for m in f.message_id_list()]
        assert not seen & set(mids), f"a message-id in two releases: {sorted(seen & set(mids))[:3]}"
        assert len(mids) == len(set(mids)), "a segment twice in one release"
        seen.update(mids)
        parts = sum(len(f.parts) for f in files)
        assert int(row["parts_seen"]) == parts, "a release's figures are not its blob's"
        out.append((str(row["groups"]), tuple(sorted(f.name for f in files)), frozenset(mids)))
    aliases = query(
        db,
        "SELECT a.member_key FROM release_aliases a LEFT JOIN releases r ON r.key = a.release_key "
        "WHERE r.key IS NULL",
    )
    assert aliases == [], "an alias to a release that is not there"
    assert query(db, "SELECT count(*) AS n FROM loose_runs") == [{"n": 0}], "a loose run left"
    if db.dialect == "sqlite":
        # The search index agrees with the releases (rank 1: against the content table too). A joined
        # burst inserted past it was never indexed, and its next update's delete corrupted the index.
        query(db, "INSERT INTO releases_fts (releases_fts, rank) VALUES ('integrity-check', 1)")
    return sorted(out, key=lambda r: sorted(r[2]))


class World:
    def __init__(self, services: Services, articles: list[Article]) -> None:
        self.services = services
        self.db = services.db
        self.articles = articles
        self.batches = {g: batch_of(articles, g) for g in GROUPS}
        self.ids = {}
        for group in GROUPS:
            shift = OFFSET if group == GROUPS[1] else 0
            services.groups.add(group)
            services.groups.plan(group, articles[0].number + shift, articles[-1].number + shift)
            self.ids[group] = int(services.groups.get(group)["id"])
        query(self.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")  # every stretch final

    def reset(self) -> None:
        """The catalog as group A's worker left it."""
        for table in TABLES:
            query(self.db, f"DELETE FROM {table}")
        self.store(GROUPS[0])

    def store(self, group: str) -> None:
        with self.db.transaction() as tx:
            store_batch(tx, self.ids[group], group, self.batches[group])

    def settle(self) -> Catalog:
        """The rounds a grouping loop runs next, until one changes nothing."""
        for _ in range(4):
            done = Grouper(self.db).run_once()
            if not (done.joined or done.alone or done.bursts or done.dropped):
                return catalog(self.db)
        raise AssertionError("grouping did not settle in four rounds")


@pytest.fixture
def world(database_url: str, tmp_path: Path) -> Iterator[World]:
    services = services_for(database_url, tmp_path, range_articles=10_000, chunk_articles=100)
    services.rules.ensure_default()
    try:
        yield World(services, posting())
    finally:
        services.close()


def writers(world: World) -> dict[str, Callable[[], object]]:
    return {"grouping": lambda: Grouper(world.db).run_once(), "batch": lambda: world.store(GROUPS[1])}


def test_a_grouping_round_and_a_cross_posts_batch_at_every_statement_boundary(world: World) -> None:
    # The reference: one writer after the other, either way round.
    references = []
    for order in (("grouping", "batch"), ("batch", "grouping")):
        world.reset()
        for name in order:
            writers(world)[name]()
        references.append(world.settle())
    assert references[0] == references[1]
    reference = references[0]
    assert reference and all(groups == " ".join(GROUPS) for groups, _, _ in reference)
    assert any(len(names) > 1 for _, names, _ in reference)  # joined releases, not only singles

    script = Interleaving(world.db)
    try:
        schedules: list[tuple[str, int]] = []
        for first in ("grouping", "batch"):
            world.reset()
            statements = len(run_alone(script, writers(world)[first]))
            schedules += [(first, k) for k in range(statements + 1)]
        rng = random.Random(16)
        schedules += [("random", rng.getrandbits(32)) for _ in range(SCHEDULES)]
        for how, at in schedules:
            world.reset()
            actors = interleave(script, world, how, at)
            for actor in actors:
                actor.outcome()  # neither failed
            assert world.settle() == reference, (how, at)
            script.reset()
    finally:
        script.close()


def run_alone(script: Interleaving, operation: Callable[[], object]) -> list[str]:
    actor = script.spawn("alone", operation)
    script.finish(actor)
    script.reset()
    return actor.statements


def interleave(script: Interleaving, world: World, how: str, at: int) -> list[Actor]:
    """``how`` = a writer's name: it stops before its ``at``-th statement, the other runs as far as it
    can, then both go on; "random": a paused actor picked at each step, seeded by ``at``."""
    work = writers(world)
    if how != "random":
        other = "batch" if how == "grouping" else "grouping"
        first = script.spawn(how, work[how])
        for _ in range(at):
            if first.done or first.state == "blocked":
                break
            script.step(first)
        second = script.spawn(other, work[other])
        script.run(second)
        actors = [first, second]
        script.free_all(actors)
        return actors
    rng = random.Random(at)
    actors = [script.spawn(name, operation) for name, operation in sorted(work.items())]
    while not all(a.done for a in actors):
        script.settle(actors)
        ready = [a for a in actors if a.state == "paused"]
        if not ready:
            script.wait_any([a for a in actors if not a.done])
            continue
        script.step(rng.choice(ready))
    return actors


def test_the_reference_holds_every_article_once(world: World) -> None:
    """The oracle's own check: both copies stored and grouped, every article posted is in one release."""
    world.reset()
    world.store(GROUPS[1])
    found = world.settle()
    assert sorted(m for _, _, mids in found for m in mids) == sorted(a.message_id for a in world.articles)
