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

from prometheus_client import generate_latest

from tests.integration.catalog.test_probe import store_obfuscated
from tests.support import inn2 as inn2_support
from tests.support.posting import yenc_parts
from tests.support.rar import Member, rar4, rar5
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.probe import Prober
from usenet_indexer.catalog.search import Search, SearchQuery
from usenet_indexer.coordinator.dashboard import dashboard
from usenet_indexer.coordinator.metrics import Metrics
from usenet_indexer.coordinator.newznab import release_item
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing import RangeIndexer, default_rules
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

LOCKED = "Quiet.Harbor.2023.1080p.BluRay.x264-GRP"
PLAIN = "Paper.Moons.2019.720p.WEB.h264-NTb"
ALBUM = "Artist 7 - Album 7 (2020) [FLAC]"
PART_BYTES = 40_000
POSTER = "Named Poster <named@poster.test>"


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


async def index_and_store(services: Services, pool: NNTPPool, group: str, low: int, high: int) -> None:
    """Articles ``low``..``high`` of ``group`` read from INN2's overview, indexed as one range, stored."""
    overview = b"".join([piece async for piece in pool.over(group, low, high, compress=False)])
    indexer = RangeIndexer(group, low, high, low, default_rules())
    indexer.add_text(overview, high + 1)
    indexer.finish()
    batch = indexer.take()
    with services.db.transaction() as tx:
        store_batch(tx, 2, group, batch)


def film_and_subtitles(rng: random.Random, name: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """A passworded film in three RAR5 volumes (``name.partNN.rar``), and its subtitles in one small
    plain RAR4 archive of the same name (``name.rar``): one release, two archive sets."""
    film = rar5(
        [Member(f"{name}.mkv", rng.randbytes(200_000), encrypted=True)],
        volume_size=90_000,
        seed=rng.randrange(1 << 30),
    )
    subtitles = rar4(
        [Member(f"{name}.srt", rng.randbytes(30_000))], volume_size=80_000, seed=rng.randrange(1 << 30)
    )
    return (
        {f"{name}.part{k:02d}.rar": v for k, v in enumerate(film, 1)},
        {f"{name}.rar": v for v in subtitles},
    )


def posted_as_one_release(
    name: str, parts: list[dict[str, bytes]], when: datetime
) -> list[list[inn2_support.Article]]:
    """Each of ``parts`` (some of one release's files) posted as articles of one release of
    ``sum(len(p))`` files: ``[k/N]`` counts over all of them."""
    total = sum(len(p) for p in parts)
    out, k = [], 0
    for files in parts:
        chunk = []
        for file_name, data in files.items():
            k += 1
            for p, n, body in yenc_parts(data, file_name, PART_BYTES):
                chunk.append(
                    inn2_support.Article(
                        message_id=f"<{uuid.uuid4().hex}@named.test>",
                        subject=f'{name} - [{k}/{total}] - "{file_name}" yEnc ({p}/{n})',
                        poster=POSTER,
                        body=body,
                        date=format_datetime(when, usegmt=True),
                    )
                )
                when += timedelta(seconds=1)
        out.append(chunk)
    return out


OTHER = "Still.Water.2021.1080p.WEB.h264-GRP"


async def test_a_subtitle_archive_stored_first_does_not_answer_for_the_film(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    """Two films, each with a plain subtitle archive beside its passworded volumes. The first's
    subtitles come in a range of their own before the film: the probe answers from them (all it has),
    then the film's first volume comes and the release is asked again, read from the film. The
    second's subtitles come after its film: asked again, it reads nothing (the film's first volume
    is still the article it read)."""
    rng = random.Random(19)
    film, subtitles = film_and_subtitles(rng, LOCKED)
    other_film, other_subtitles = film_and_subtitles(rng, OTHER)
    when = datetime.now(UTC) - timedelta(hours=1)
    locked_subs, locked_film = posted_as_one_release(LOCKED, [subtitles, film], when)
    other_film_articles, other_subs = posted_as_one_release(OTHER, [other_film, other_subtitles], when)
    group = inn2_support.new_group("alt.binaries.passwords")

    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)

    def state(name: str) -> tuple[bool | None, int, str]:
        (row,) = query(
            services.db,
            "SELECT r.password, q.articles, q.status FROM releases r"
            " JOIN probe_queue q ON q.release_key = r.key WHERE r.name = :n AND r.group_name = :g",
            {"n": name, "g": group},
        )
        password = None if row["password"] is None else bool(row["password"])
        return password, int(row["articles"]), str(row["status"])

    try:
        async with NNTPPool([server]) as pool:
            ranges: list[tuple[int, int]] = []
            for articles_ in (locked_subs, locked_film + other_film_articles, other_subs):
                low = (await pool.group(group)).high + 1 if ranges else 1
                assert inn2_support.post_articles(group, articles_) == len(articles_)
                ranges.append((low, (await pool.group(group)).high))

            await index_and_store(services, pool, group, *ranges[0])
            await Prober(services.db, pool.body).run_once()
            assert state(LOCKED) == (False, 1, "done")  # the subtitles: all the release holds yet

            await index_and_store(services, pool, group, *ranges[1])
            assert state(LOCKED)[2] == "queued"  # the film's first volume came: asked again
            await Prober(services.db, pool.body).run_once()
            assert state(LOCKED) == (True, 2, "done")
            assert state(OTHER) == (True, 1, "done")

            await index_and_store(services, pool, group, *ranges[2])
            assert state(OTHER)[2] == "queued"  # its subtitles' candidate, another article
            results = await Prober(services.db, pool.body).run_once()
            assert [(r.password, r.articles, r.error) for r in results] == [(True, 0, None)]
            assert state(OTHER) == (True, 1, "done")  # nothing read: the film's volume still answers
    finally:
        services.close()


async def test_a_film_stored_while_its_subtitles_are_read_has_the_release_asked_again(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    """The film's batch is stored between the probe's reading of the release and its answer (its
    candidate finds the probe working and is dropped): the answer from the subtitles is not stored,
    the release is queued again, and the next round reads the film."""
    rng = random.Random(20)
    film, subtitles = film_and_subtitles(rng, LOCKED)
    when = datetime.now(UTC) - timedelta(hours=1)
    subs_articles, film_articles = posted_as_one_release(LOCKED, [subtitles, film], when)
    group = inn2_support.new_group("alt.binaries.passwords")
    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    try:
        async with NNTPPool([server]) as pool:
            assert inn2_support.post_articles(group, subs_articles) == len(subs_articles)
            first_high = (await pool.group(group)).high
            assert inn2_support.post_articles(group, film_articles) == len(film_articles)
            high = (await pool.group(group)).high
            await index_and_store(services, pool, group, 1, first_high)

            async def film_stored_meanwhile(message_id: str) -> bytes:
                body = await pool.body(message_id)
                await index_and_store(services, pool, group, first_high + 1, high)
                return body

            (cut,) = await Prober(services.db, film_stored_meanwhile).run_once()
            assert cut.error is not None and "asked again" in cut.error
            (row,) = query(services.db, "SELECT status, articles FROM probe_queue")
            assert (row["status"], int(row["articles"])) == ("queued", 1)
            (release,) = query(services.db, "SELECT password FROM releases")
            assert release["password"] is None  # the subtitles' answer was not stored

            (answer,) = await Prober(services.db, pool.body).run_once()
            assert (answer.error, answer.password, answer.articles) == (None, True, 1)
    finally:
        services.close()
