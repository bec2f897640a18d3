"""Releases posted under per-file random names, against INN2 (issue 16): real files and a real PAR2 set
(par2cmdline), yEnc-encoded in parts, every file under a random subject and a random yEnc name of its
own; a second release by the same poster a few minutes later, whose yEnc headers carry the real names
and which has no PAR2. Indexed from INN2's overview in two ranges, joined by the grouping loop,
probed through the NNTP pool: each release is named, its NZB carries the real file names, its
category follows from them, and what the probe fetched is counted."""

from __future__ import annotations

import base64
import hashlib
import random
import subprocess
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from tests.support import inn2 as inn2_support
from tests.support.nzbget import NZBGet, wait_for_history
from tests.support.posting import yenc_parts
from tests.support.rar import Member, rar5
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.grouping import Grouper
from usenet_indexer.catalog.nzbs import nzb_bytes, nzb_release
from usenet_indexer.catalog.probe import Prober
from usenet_indexer.coordinator.http.dashboard import dashboard
from usenet_indexer.coordinator.http.metrics import Metrics
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.indexing import RangeIndexer, default_rules, unpack_segments
from usenet_indexer.indexing.grouping import GAP_ARTICLES
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

MOVIE = "Glass.Garden.2021.1080p.BluRay.x264-FLUX"
SHOW = "Harbor.Watch.S02E05.720p.WEB.h264-NTb"
PART_BYTES = 60_000  # yEnc parts of 60 KB: files of several parts, the PAR2 index in one
POSTER = "Random Poster <random@poster.test>"


@pytest.fixture(scope="module")
def inn2() -> None:
    inn2_support.ensure_inn2()


@pytest.fixture
def nzbget(tmp_path: Path) -> Iterator[NZBGet]:
    folder = tmp_path / "nzbget"
    folder.mkdir()
    # As downloaders are set up for obfuscated posts: files renamed by the PAR2 (16 KiB hashes) while
    # they download and after.
    client = NZBGet(folder, DirectRename="yes", ParRename="yes")
    yield client
    client.close()


def make_movie(folder: Path, rng: random.Random) -> dict[str, bytes]:
    """Four volumes of a RAR5 archive whose file is passworded (its headers say so as `rar -p` writes
    them: tests/support/rar.py) and the PAR2 set par2cmdline makes for them."""
    member = Member(f"{MOVIE}.mkv", rng.randbytes(590_000), encrypted=True)
    volumes = rar5([member], volume_size=150_000, seed=rng.randrange(1 << 30))
    assert len(volumes) == 4
    names = [f"{MOVIE}.part{k:02d}.rar" for k in range(1, 5)]
    for name, volume in zip(names, volumes, strict=True):
        (folder / name).write_bytes(volume)
    subprocess.run(
        ["par2", "create", "-q", "-r10", "-n2", f"{MOVIE}.par2", *names],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def articles_of(
    files: dict[str, bytes], rng: random.Random, when: datetime, *, real_yenc_names: bool
) -> tuple[list[inn2_support.Article], dict[str, str]]:
    """Every file in yEnc parts under ``[k/N] - "<random>" yEnc (p/P)``; the random name of each file."""
    posted: dict[str, str] = {}
    out = []
    n = len(files)
    for k, (name, data) in enumerate(sorted(files.items(), key=lambda item: rng.random()), 1):
        random_name = f"{rng.getrandbits(128):032x}"
        posted[name] = random_name
        for p, total, body in yenc_parts(data, name if real_yenc_names else random_name, PART_BYTES):
            out.append(
                inn2_support.Article(
                    message_id=f"<{uuid.uuid4().hex}@random.names.test>",
                    subject=f'[{k}/{n}] - "{random_name}" yEnc ({p}/{total})',
                    poster=POSTER,
                    body=body,
                    date=format_datetime(when, usegmt=True),
                )
            )
            when += timedelta(seconds=1)
    return out, posted


def index(services: Services, group: str, overview: bytes, high: int, *, again: bool = False) -> None:
    """The overview in two ranges, cut in the middle of the first release; the ranges recorded done.
    ``again``: the first range indexed once more (a reindex), the group already planned."""
    cut = high // 3
    lines = overview.split(b"\r\n")

    def upto(last: int, first: int) -> bytes:
        return b"".join(
            line + b"\r\n" for line in lines if line and first <= int(line.split(b"\t", 1)[0]) <= last
        )

    end = high + GAP_ARTICLES + 1  # the group goes on past the posts: their bursts are final
    if not again:
        services.groups.add(group)
        services.groups.plan(group, 1, end)
    for first, last in ((1, cut),) if again else ((1, cut), (cut + 1, end)):
        indexer = RangeIndexer(group, first, last, first, default_rules())
        indexer.add_text(upto(last, first), last + 1)
        indexer.finish()
        with services.db.transaction() as tx:
            group_id = int(tx.run("group_by_name", {"name": group})[0]["id"])
            store_batch(tx, group_id, group, indexer.take())
    query(services.db, "UPDATE ranges SET status = 'done', next_id = end_id + 1")


async def test_releases_of_random_names_are_joined_and_named_from_their_bodies(
    inn2: None, database_url: str, tmp_path: Path, nzbget: NZBGet
) -> None:
    rng = random.Random(16)
    (tmp_path / "movie").mkdir()
    movie = make_movie(tmp_path / "movie", rng)
    assert any(".vol" in n for n in movie) and f"{MOVIE}.par2" in movie
    # As many files as the movie's: the two releases share poster and file total, and only the file
    # counters tell them apart.
    show = {f"{SHOW}.part{k:02d}.rar": rng.randbytes(90_000 + k) for k in range(1, len(movie))}
    show[f"{SHOW}.nfo"] = b"Harbor Watch\r\n" * 40
    assert len(show) == len(movie)
    start = datetime.now(UTC) - timedelta(hours=2)
    movie_articles, _ = articles_of(movie, rng, start, real_yenc_names=False)
    # Minutes later, the same poster: another release, real yEnc names, no PAR2.
    show_articles, show_names = articles_of(show, rng, start + timedelta(minutes=4), real_yenc_names=True)
    group = inn2_support.new_group("alt.binaries.random.names")
    articles = movie_articles + show_articles
    assert inn2_support.post_articles(group, articles) == len(articles)

    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    try:
        async with NNTPPool([server]) as pool:
            info = await pool.group(group)
            overview = b"".join([piece async for piece in pool.over(group, 1, info.high, compress=False)])
            index(services, group, overview, info.high)
            assert len(query(services.db, "SELECT key FROM releases")) == len(movie) + len(show)
            done = Grouper(services.db).run_once()
            assert (done.joined, done.members) == (2, len(movie) + len(show))
            results = await Prober(services.db, pool.body).run_once()
        assert sorted((r.name, r.error) for r in results) == [(MOVIE, None), (SHOW, None)]

        rows = query(
            services.db,
            "SELECT r.key, r.name, r.name_source, r.category, r.obfuscated, r.password, r.poster, r.groups, "
            "r.first_date, r.posted_at, r.segments, p.articles, p.bytes "
            "FROM releases r JOIN probe_queue p ON p.release_key = r.key ORDER BY r.name",
        )
        # Indexed again after the probe (a reindex): the members' fragments merge into the joined
        # releases by their aliases, their random file names renamed as the probe renamed them.
        before = query(services.db, "SELECT key, name, files_seen, parts_seen FROM releases ORDER BY key")
        index(services, group, overview, info.high, again=True)
        assert (
            query(services.db, "SELECT key, name, files_seen, parts_seen FROM releases ORDER BY key")
            == before
        )
        rows = query(
            services.db,
            "SELECT r.key, r.name, r.name_source, r.category, r.obfuscated, r.password, r.poster, r.groups, "
            "r.first_date, r.posted_at, r.segments, p.articles, p.bytes "
            "FROM releases r JOIN probe_queue p ON p.release_key = r.key ORDER BY r.name",
        )
        by_name = {r["name"]: r for r in rows}
        assert set(by_name) == {MOVIE, SHOW}
        movie_row, show_row = by_name[MOVIE], by_name[SHOW]
        assert (movie_row["name_source"], movie_row["category"], movie_row["obfuscated"]) == (
            "par2",
            2040,
            False,
        )
        assert (show_row["name_source"], show_row["category"], show_row["obfuscated"]) == (
            "yenc",
            5040,
            False,
        )
        # The first volume's headers, read from its first article: passworded. The show's rar files
        # are random bytes, which say nothing.
        assert movie_row["password"] in (True, 1) and show_row["password"] is None

        # The NZB carries the real names: the PAR2 matched the rar volumes by size and 16 KiB hash, and
        # named its index file; the recovery volumes are named as par2cmdline named them, by their
        # first recovery slice and their size (indexing/volumes.py).
        movie_files = {f.name for f in nzb_release(movie_row).files}
        assert movie_files == set(movie)
        assert any(n is not None and n.startswith(f"{MOVIE}.vol") for n in movie_files)
        assert {f.name for f in nzb_release(show_row).files} == set(show)

        # What it cost: one article per file fetched at most, counted with its bytes.
        assert 1 <= int(movie_row["articles"]) <= len(movie)
        assert int(movie_row["bytes"]) > 0
        assert int(show_row["articles"]) <= len(show)
        assert set(show_names.values()).isdisjoint({f.name for f in nzb_release(show_row).files})

        # /metrics and the dashboard show the probes and their cost.
        probed = int(movie_row["articles"]) + int(show_row["articles"])
        fetched = int(movie_row["bytes"]) + int(show_row["bytes"])
        text = generate_latest(Metrics(services).registry).decode()
        assert 'usenet_indexer_probes{status="done"} 2.0' in text
        assert f'usenet_indexer_probe_articles{{status="done"}} {probed:.1f}' in text
        assert f'usenet_indexer_probe_bytes{{status="done"}} {float(fetched)}' in text
        assert "usenet_indexer_joined_releases 2.0" in text
        # NZBGet downloads the movie from INN2 by its NZB: every file byte for byte, the rar volumes
        # under their real names, the PAR2 set verified (NZBGet names PAR2 files its own way).
        nzb = nzb_bytes(movie_row)
        content = base64.b64encode(nzb).decode()
        nzbget.call("append", f"{MOVIE}.nzb", content, "", 0, False, False, "", 0, "SCORE", [])
        entry = wait_for_history(nzbget)
        assert entry["Status"].startswith("SUCCESS"), (entry, nzbget.log())
        assert entry["ParStatus"] == "SUCCESS", nzbget.log()
        downloaded = {p.name: p.read_bytes() for p in Path(entry["DestDir"]).iterdir()}
        for name, data in movie.items():
            if name.endswith(".rar"):
                assert downloaded.get(name) == data, (name, sorted(downloaded))
        assert sorted(hashlib.md5(d).hexdigest() for d in downloaded.values()) == sorted(
            hashlib.md5(d).hexdigest() for d in movie.values()
        )

        probes = dashboard(services).probes
        assert (probes.named, probes.pending, probes.articles, probes.bytes, probes.joined) == (
            2,
            0,
            probed,
            fetched,
            2,
        )
    finally:
        services.close()


async def test_bodies_that_name_nothing_leave_the_release_as_it_is(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    """Random subjects, random yEnc names, no PAR2: the probe fetches each file's first article, finds
    no name that fits, and says so; the release and its files keep their posted names."""
    rng = random.Random(61)
    files = {f"file{k}.bin": rng.randbytes(70_000 + k) for k in range(1, 4)}
    posted, names = articles_of(files, rng, datetime.now(UTC) - timedelta(hours=3), real_yenc_names=False)
    group = inn2_support.new_group("alt.binaries.random.nothing")
    assert inn2_support.post_articles(group, posted) == len(posted)
    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    try:
        async with NNTPPool([server]) as pool:
            info = await pool.group(group)
            overview = b"".join([piece async for piece in pool.over(group, 1, info.high, compress=False)])
            index(services, group, overview, info.high)
            assert Grouper(services.db).run_once().joined == 1
            (before,) = query(services.db, "SELECT key, name, segments FROM releases")
            (result,) = await Prober(services.db, pool.body).run_once()
        assert result.name is None and result.error is not None
        assert "the bodies name nothing" in result.error
        assert result.articles == len(files)  # each file's first article, once
        (after,) = query(services.db, "SELECT key, name, name_source, obfuscated, segments FROM releases")
        assert (after["name"], after["name_source"], after["obfuscated"]) == (before["name"], "subject", True)
        assert bytes(after["segments"]) == bytes(before["segments"])
        assert {f.name for f in unpack_segments(bytes(after["segments"]))} == set(names.values())
    finally:
        services.close()


async def test_a_first_article_gone_costs_its_files_name_only(
    inn2: None, database_url: str, tmp_path: Path
) -> None:
    """A file's first article cancelled after the overview was read (430 to BODY): the probe names the
    release and the other files; that file keeps its posted name."""
    rng = random.Random(62)
    (tmp_path / "movie").mkdir()
    movie = make_movie(tmp_path / "movie", rng)
    posted, names = articles_of(movie, rng, datetime.now(UTC) - timedelta(hours=3), real_yenc_names=False)
    group = inn2_support.new_group("alt.binaries.random.gone")
    assert inn2_support.post_articles(group, posted) == len(posted)
    gone = f"{MOVIE}.part02.rar"
    first = next(a for a in posted if a.subject.startswith("[") and f'"{names[gone]}" yEnc (1/' in a.subject)
    services = services_for(database_url, tmp_path / "data")
    server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
    try:
        async with NNTPPool([server]) as pool:
            info = await pool.group(group)
            overview = b"".join([piece async for piece in pool.over(group, 1, info.high, compress=False)])
            index(services, group, overview, info.high)
            subprocess.run(
                [inn2_support.CTLINND, "-t", "30", "cancel", first.message_id],
                check=True,
                capture_output=True,
            )
            assert Grouper(services.db).run_once().joined == 1
            (result,) = await Prober(services.db, pool.body).run_once()
        assert (result.name, result.error) == (MOVIE, None)
        (row,) = query(services.db, "SELECT segments FROM releases")
        files = {f.name for f in unpack_segments(bytes(row["segments"]))}
        assert names[gone] in files and gone not in files
        assert {n for n in movie if n.endswith(".rar") and n != gone} <= files
    finally:
        services.close()
