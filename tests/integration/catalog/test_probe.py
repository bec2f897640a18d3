"""Probing an obfuscated release: its PAR2 index (made by the real par2 tool) is posted to INN2 as a
yEnc article; the probe fetches it, reads the real file names and renames the release."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support import inn2 as inn2_support
from tests.support.store import query, services_for
from usenet_indexer.catalog.batch_store import store_batch
from usenet_indexer.catalog.probe import ProbeFailed, Prober, name_from_par2
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.db import Fenced
from usenet_indexer.indexing import RangeIndexer
from usenet_indexer.indexing.merge import unpack_segments
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.leases.ownership import OwnershipFence, OwnershipLeases
from usenet_indexer.nntp import yenc
from usenet_indexer.nntp.pool import NNTPPool, ServerSettings

GROUP = "alt.binaries.probe"
HASH = "a3f9c2e1b7d84f0e9a1b2c3d4e5f6a7b"
REAL = "Quiet.Harbor.2023.1080p.BluRay.x264-GRP"


def par2_index(folder: Path) -> bytes:
    """A real PAR2 index for a rar set called REAL (par2cmdline)."""
    names = [f"{REAL}.part{i:02d}.rar" for i in range(1, 4)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(bytes([i]) * 20_000)
    subprocess.run(
        ["par2", "create", "-q", "-r10", f"{REAL}.par2", *names], cwd=folder, check=True, capture_output=True
    )
    return (folder / f"{REAL}.par2").read_bytes()


def overview(par2_message_id: str, name_hash: str = HASH) -> bytes:
    """An obfuscated post: the file names are a hash; the PAR2 index is the last file."""
    lines = []
    files = [(f"{name_hash}.part{i:02d}.rar", 2) for i in range(1, 4)] + [(f"{name_hash}.par2", 1)]
    number = 1
    tag = "" if name_hash == HASH else f"-{name_hash[:8]}"
    for index, (name, parts) in enumerate(files, 1):
        for part in range(1, parts + 1):
            mid = par2_message_id if name.endswith(".par2") else f"<p{number}{tag}@probe.test>"
            subject = f'[{index}/{len(files)}] - "{name}" yEnc ({part}/{parts})'
            lines.append(
                f"{number}\t{subject}\tposter@example.test\tMon, 30 Nov 2026 10:00:00 +0000\t{mid}\t\t"
                f"50000\t400\tXref: test {GROUP}:{number}".encode()
            )
            number += 1
    return b"".join(line + b"\r\n" for line in lines)


def post_par2_index(folder: Path) -> inn2_support.Article:
    """The PAR2 index of ``par2_index`` posted to INN2 under the obfuscated set's name."""
    inn2_support.ensure_inn2()
    group = inn2_support.new_group("alt.binaries.probe")
    article = inn2_support.Article(
        message_id=f"<par2-{uuid.uuid4().hex}@probe.test>",
        subject=f'[4/4] - "{HASH}.par2" yEnc (1/1)',
        poster="poster@example.test",
        body=yenc.encode(par2_index(folder), f"{HASH}.par2"),
        date="Mon, 30 Nov 2026 10:00:00 +0000",
    )
    assert inn2_support.post_articles(group, [article]) == 1
    return article


def store_obfuscated(services: Services, par2_message_id: str, name_hash: str = HASH) -> None:
    """The obfuscated post of ``overview`` indexed and stored: its release queued for a probe."""
    indexer = RangeIndexer(GROUP, 1, 7, 1, default_rules())
    indexer.add_text(overview(par2_message_id, name_hash), 8)
    indexer.finish()
    with services.db.transaction() as tx:
        store_batch(tx, 1, GROUP, indexer.take())


@pytest.mark.slow
def test_name_from_par2_reads_the_main_files(tmp_path: Path) -> None:
    name, files = name_from_par2(par2_index(tmp_path))
    assert name == REAL
    assert f"{REAL}.part01.rar" in files
    with pytest.raises(ProbeFailed, match="no PAR2"):
        name_from_par2(b"not a par2 file at all")


@pytest.mark.inn2
async def test_probe_renames_an_obfuscated_release_from_inn2(database_url: str, tmp_path: Path) -> None:
    article = post_par2_index(tmp_path)

    services = services_for(database_url, tmp_path / "data")
    try:
        text = overview(article.message_id)
        indexer = RangeIndexer(GROUP, 1, 7, 1, default_rules())
        indexer.add_text(text, 8)
        indexer.finish()
        batch = indexer.take()
        assert len(batch.candidates) == 1
        with services.db.transaction() as tx:
            store_batch(tx, 1, GROUP, batch)
        before = query(services.db, "SELECT name, obfuscated, category FROM releases")
        assert before[0]["obfuscated"]

        server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
        async with NNTPPool([server]) as pool:
            results = await Prober(services.db, pool.body).run_once()
        assert [(r.name, r.error) for r in results] == [(REAL, None)]
        (release,) = query(services.db, "SELECT name, name_source, obfuscated, category FROM releases")
        assert (release["name"], release["name_source"], release["obfuscated"]) == (REAL, "par2", False)
        assert release["category"] == 2040  # Movies HD: the real name says 1080p
        assert query(services.db, "SELECT status FROM probe_queue") == [{"status": "done"}]
        # A fragment of the same release arriving later keeps the probed name.
        with services.db.transaction() as tx:
            store_batch(tx, 1, GROUP, batch)
        assert query(services.db, "SELECT name FROM releases") == [{"name": REAL}]
    finally:
        services.close()


async def test_a_missing_article_is_retried_then_failed_with_the_reason(
    database_url: str, tmp_path: Path
) -> None:
    services = services_for(database_url, tmp_path)
    try:
        store_obfuscated(services, "<gone@probe.test>")

        async def missing(message_id: str) -> bytes:
            raise LookupError(f"430 no such article {message_id}")

        prober = Prober(services.db, missing)
        for _ in range(3):
            (result,) = await prober.run_once()
            assert result.error is not None
            assert "430" in result.error
        assert await prober.run_once() == []
        (row,) = query(services.db, "SELECT status, attempts, error FROM probe_queue")
        assert (row["status"], row["attempts"]) == ("failed", 3)
        assert "no such article" in row["error"]
    finally:
        services.close()


async def test_a_candidate_naming_an_article_outside_its_release_is_not_fetched(
    database_url: str, tmp_path: Path
) -> None:
    """Issue 15.2: a candidate comes from an edge node, and a probe renames a release from the article
    it names: only an article of that release is fetched."""
    services = services_for(database_url, tmp_path)
    try:
        store_obfuscated(services, "<own@probe.test>")
        query(services.db, "UPDATE probe_queue SET par2_message_id = 'planted@elsewhere.test'")
        fetched: list[str] = []

        async def body(message_id: str) -> bytes:
            fetched.append(message_id)
            raise LookupError("not reached")

        (result,) = await Prober(services.db, body).run_once()
        assert result.error is not None and "not an article of the release" in result.error
        assert fetched == []
    finally:
        services.close()


async def test_a_probe_cut_off_with_its_round_is_queued_again_as_an_attempt(
    database_url: str, tmp_path: Path
) -> None:
    # It stayed "working" for STALE_SECONDS (ten minutes), and one too slow for any round never failed.
    services = services_for(database_url, tmp_path)
    try:
        store_obfuscated(services, "<slow@probe.test>")

        async def slow(message_id: str) -> bytes:
            await asyncio.sleep(60)
            raise AssertionError("not reached")

        prober = Prober(services.db, slow)
        for attempt in range(1, 4):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(prober.run_once(), 0.3)
            (row,) = query(services.db, "SELECT status, attempts, error FROM probe_queue")
            assert row["attempts"] == attempt
            assert row["status"] == ("queued" if attempt < 3 else "failed")
            assert "cut off" in row["error"]
        assert await prober.run_once() == []  # failed for good after three
    finally:
        services.close()


async def test_probes_left_working_by_a_dead_holder_are_taken_back_when_the_loop_is_claimed(
    database_url: str, tmp_path: Path
) -> None:
    """A coordinator killed mid-round left its probes "working" for STALE_SECONDS (ten minutes): the
    next holder of the probe loop queues them again when it claims the loop, and the dead holder's
    late write is fenced."""
    services = services_for(database_url, tmp_path)
    try:
        store_obfuscated(services, "<left@probe.test>")
        first = OwnershipLeases(services.db, "host:101:aaaaaa")
        assert first.acquire("probe").ok
        dead = Prober(services.db, _never_called, fence=OwnershipFence(first, "probe"))
        assert [row["release_key"] for row in dead.take()]  # taken, then the process is killed
        second = OwnershipLeases(services.db, "host:102:bbbbbb")
        assert not second.acquire("probe").ok  # alive as far as the TTL says
        assert second.acquire("probe", gone=lambda holder: holder == "host:101:aaaaaa").ok
        fetched: list[str] = []

        async def missing(message_id: str) -> bytes:
            fetched.append(message_id)
            raise LookupError(f"430 no such article {message_id}")

        (result,) = await Prober(services.db, missing, fence=OwnershipFence(second, "probe")).run_once()
        assert result.error is not None and "430" in result.error
        assert fetched == ["<left@probe.test>"]
        (row,) = query(services.db, "SELECT status, attempts, error FROM probe_queue")
        assert (row["status"], row["attempts"]) == ("queued", 2)  # the abandoned round counted
        with pytest.raises(Fenced):
            dead._cut_off([str(result.key)])
    finally:
        services.close()


async def test_a_round_starts_the_next_probe_as_each_ends_and_does_not_retry_a_failure_at_once(
    database_url: str, tmp_path: Path
) -> None:
    """A round of 8 waited for its slowest probe before the next 8 began: the demo's 1,300 probes
    drained at ~27 a second. Now each probe that ends makes room for the next queued one."""
    services = services_for(database_url, tmp_path)
    try:
        for n in range(6):
            store_obfuscated(
                services, f"<r{n}@probe.test>", name_hash=uuid.uuid5(uuid.NAMESPACE_DNS, str(n)).hex
            )
        fetched: list[str] = []
        slow_ended: list[int] = []  # how many fetches had begun when the slow one ended

        async def missing(message_id: str) -> bytes:
            fetched.append(message_id)
            await asyncio.sleep(2.0 if message_id == "<r0@probe.test>" else 0.01)
            if message_id == "<r0@probe.test>":
                slow_ended.append(len(fetched))
            raise LookupError(f"430 no such article {message_id}")

        results = await Prober(services.db, missing, batch=2).run_once(refill_seconds=5.0)
        assert len(results) == 6
        assert slow_ended == [6]  # the five others ran beside the slow one, one after another
        assert sorted(fetched) == sorted(f"<r{n}@probe.test>" for n in range(6))  # each failure once
        rows = query(services.db, "SELECT status, attempts FROM probe_queue")
        assert {(r["status"], r["attempts"]) for r in rows} == {("queued", 1)}
        # Without refilling, a round is its first batch.
        assert len(await Prober(services.db, missing, batch=2).run_once()) == 2
    finally:
        services.close()


async def _never_called(message_id: str) -> bytes:
    raise AssertionError("not fetched")


@pytest.mark.inn2
async def test_a_file_stored_while_the_probe_reads_is_renamed_with_its_set(
    database_url: str, tmp_path: Path
) -> None:
    """A set member merged into the release between the probe's read and its rename is renamed with the
    set, as one stored after the probe is (batch_store.renamed): test_run's resumed catalog held
    ``<hash>.part01.rar`` where the uninterrupted one held the real name, by when that file's batch came."""
    article = post_par2_index(tmp_path)
    lines = overview(article.message_id).splitlines(keepends=True)
    first_file, rest = b"".join(lines[:2]), b"".join(lines[2:])  # part01.rar is articles 1 and 2

    def store(text: bytes, low: int, high: int) -> None:
        indexer = RangeIndexer(GROUP, low, high, low, default_rules())
        indexer.add_text(text, high + 1)
        indexer.finish()
        with services.db.transaction() as tx:
            store_batch(tx, 1, GROUP, indexer.take())

    services = services_for(database_url, tmp_path / "data")
    try:
        store(rest, 3, 7)
        server = ServerSettings(host=inn2_support.HOST, port=inn2_support.PLAIN_PORT, connections=2)
        async with NNTPPool([server]) as pool:

            async def fetch_then_store(message_id: str) -> bytes:
                data = await pool.body(message_id)
                store(first_file, 1, 2)  # the batch of part01 lands while the probe reads
                return data

            results = await Prober(services.db, fetch_then_store).run_once()
        assert [(r.name, r.error) for r in results] == [(REAL, None)]
        (row,) = query(services.db, "SELECT segments FROM releases")
        names = sorted(f.name for f in unpack_segments(bytes(row["segments"])))
        assert names == [f"{REAL}.par2", *(f"{REAL}.part{i:02d}.rar" for i in range(1, 4))]
    finally:
        services.close()
