"""Passwords of releases named by their subjects, against INN2 (issue 16): a passworded RAR5 set, a
plain RAR4 set and a FLAC album, posted as ``Name - [k/N] - "file" yEnc (p/P)``, indexed from INN2's
overview and stored; the worker queues a password probe for each release whose first archive volume's
first article it saw, after the probes that name obfuscated releases; the probe fetches that one article
from INN2 and the newznab results say ``password`` 1, 0, and nothing for the album."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from tests.integration.catalog.test_probe import store_obfuscated
from tests.support import inn2 as inn2_support
from tests.support.posting import yenc_parts
from tests.support.rar import Member, rar4, rar5
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.probe import Prober
from usenet_indexer.catalog.search import Search, SearchQuery
from usenet_indexer.coordinator.http.dashboard import dashboard
from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.http.newznab import release_item
from usenet_indexer.indexing import RangeIndexer, default_rules
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

LOCKED = "Quiet.Harbor.2023.1080p.BluRay.x264-GRP"
PLAIN = "Paper.Moons.2019.720p.WEB.h264-NTb"
ALBUM = "Artist 7 - Album 7 (2020) [FLAC]"
PART_BYTES = 40_000
POSTER = "Named Poster <named@poster.test>"


@pytest.fixture(scope="module")
def inn2() -> None:
    inn2_support.ensure_inn2()


def releases(rng: random.Random) -> dict[str, dict[str, bytes]]:
    locked = rar5(
        [Member(f"{LOCKED}.mkv", rng.randbytes(200_000), encrypted=True)],
        volume_size=90_000,
        seed=rng.randrange(1 << 30),
    )
    plain = rar4(
        [Member(f"{PLAIN}.mkv", rng.randbytes(150_000))], volume_size=80_000, seed=rng.randrange(1 << 30)
    )
    return {
        # Listed out of order: the first volume is found by its name, not by its place.
        LOCKED: {f"{LOCKED}.part{k:02d}.rar": v for k, v in reversed(list(enumerate(locked, 1)))},
        PLAIN: {f"{PLAIN}.part{k}.rar": v for k, v in enumerate(plain, 1)},
        ALBUM: {f"{k:02d} - Track {k}.flac": rng.randbytes(50_000 + k) for k in range(1, 4)},
    }


def articles(name: str, files: dict[str, bytes], when: datetime) -> list[inn2_support.Article]:
    out = []
    for k, (file_name, data) in enumerate(files.items(), 1):
        for p, total, body in yenc_parts(data, file_name, PART_BYTES):
            out.append(
                inn2_support.Article(
                    message_id=f"<{uuid.uuid4().hex}@named.test>",
                    subject=f'{name} - [{k}/{len(files)}] - "{file_name}" yEnc ({p}/{total})',
                    poster=POSTER,
                    body=body,
                    date=format_datetime(when, usegmt=True),
                )
            )
            when += timedelta(seconds=1)
    return out


async def test_a_release_named_by_its_subjects_gets_its_password_attribute(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    rng = random.Random(16)
    posted = releases(rng)
    when = datetime.now(UTC) - timedelta(hours=1)
    group = inn2_support.new_group("alt.binaries.passwords")
    every = [a for name, files in posted.items() for a in articles(name, files, when)]
    assert inn2_support.post_articles(group, every) == len(every)

    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    try:
        async with NNTPPool([server]) as pool:
            info = await pool.group(group)
            overview = b"".join([piece async for piece in pool.over(group, 1, info.high, compress=False)])
            indexer = RangeIndexer(group, 1, info.high, 1, default_rules())
            indexer.add_text(overview, info.high + 1)
            indexer.finish()
            batch = indexer.take()
            # One password probe per release with archives, naming its first volume's first article.
            firsts = {
                a.message_id.strip("<>")
                for a in every
                if (".part01.rar" in a.subject or ".part1.rar" in a.subject) and "(1/" in a.subject
            }
            assert {c.archive_message_id for c in batch.candidates} == firsts
            assert {c.name for c in batch.candidates} == {LOCKED, PLAIN}
            with services.db.transaction() as tx:
                store_batch(tx, 2, group, batch)
            # An obfuscated release queued after them: probed first all the same.
            store_obfuscated(services, "<gone@password.test>")
            queued = query(services.db, "SELECT release_key, priority FROM probe_queue ORDER BY priority")
            assert [int(r["priority"]) for r in queued] == [0, 1, 1]

            first = await Prober(services.db, pool.body, batch=1).run_once()
            assert [r.name for r in first] == [None] and first[0].error is not None  # the obfuscated one
            # The next round: the obfuscated one again (retried), then the two password probes.
            results = await Prober(services.db, pool.body).run_once()
        # (RETURNING gives the rows taken in no particular order.)
        answered = [r for r in results if r.error is None]
        assert len(results) == 3 and len(answered) == 2
        assert sorted((bool(r.password), r.articles) for r in answered) == [(False, 1), (True, 1)]

        rows = query(
            services.db, "SELECT name, password, obfuscated FROM releases WHERE group_name = :g", {"g": group}
        )
        states = {r["name"]: (None if r["password"] is None else bool(r["password"])) for r in rows}
        assert states == {LOCKED: True, PLAIN: False, ALBUM: None}
        assert not any(r["obfuscated"] for r in rows)  # the names were left as the subjects gave them

        search = Search(services.db)
        attrs = {}
        for name in (LOCKED, PLAIN, ALBUM):
            (hit,) = [h for h in search.search(SearchQuery(text=name)).hits if h.name == name]
            item = release_item("http://indexer.test/", hit, "k", extended=True)
            attrs[name] = dict(item.attrs).get("password")
        assert attrs == {LOCKED: "1", PLAIN: "0", ALBUM: None}

        # The cost: one article a release, on /metrics with the other probes'.
        done = query(services.db, "SELECT articles, bytes FROM probe_queue WHERE status = 'done'")
        assert sorted(int(r["articles"]) for r in done) == [1, 1]
        text = generate_latest(Metrics(services).registry).decode()
        assert 'usenet_indexer_probe_articles{status="done"} 2.0' in text
        assert 'usenet_indexer_password_probes{status="done"} 2.0' in text
        assert 'usenet_indexer_password_probe_articles{status="done"} 2.0' in text
        # The dashboard: two passwords read, no release named from its bodies (the obfuscated one is
        # still to probe).
        probes = dashboard(services).probes
        assert (probes.named, probes.passwords, probes.password_articles, probes.pending) == (0, 2, 2, 1)
    finally:
        services.close()
