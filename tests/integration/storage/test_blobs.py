"""The BlobStore promises, held by each store: the local directory and S3 (moto's server on loopback).

Every behaviour test runs on both (the ``store`` fixture); what only one of them has (temporary files,
multipart uploads, If-Match) is checked through ``leftovers`` or in tests of its own at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.s3 import MotoServer, uploads_in_progress
from usenet_indexer.articles import ChunkSpan, chunk_spans
from usenet_indexer.storage.blobs import BlobError, BlobStore, BlobTooLarge, LocalBlobStore, check_key
from usenet_indexer.storage.s3 import MIN_PART_BYTES
from usenet_indexer.storage.snapshots import Snapshots
from usenet_indexer.storage.spool import Spool

PART = MIN_PART_BYTES  # the S3 store's part size here: the smallest S3 allows


@dataclass
class Case:
    store: BlobStore
    leftovers: Callable[[], list[str]]  # what writers left half-written: temporary files, uploads


@pytest.fixture(params=["local", "s3"])
def case(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Case]:
    if request.param == "local":
        root = tmp_path / "blobs"
        yield Case(LocalBlobStore(root), lambda: sorted(p.name for p in root.rglob(".tmp-*")))
    else:
        moto: MotoServer = request.getfixturevalue("moto_server")
        store = moto.store(moto.new_bucket(), "deploy/one", part_bytes=PART)
        store.page_size = 3  # pages of three keys: listing and sweeping cross page boundaries
        store.delete_batch = 2
        yield Case(store, lambda: uploads_in_progress(store))


@pytest.fixture
def store(case: Case) -> BlobStore:
    return case.store


@pytest.mark.parametrize(
    "key", ["", "../x", "spool/../../etc", "a//b", "/abs", "spool/.hidden", "a/b c", "a/.."]
)
def test_keys_that_could_leave_the_root_are_refused(key: str) -> None:
    with pytest.raises(BlobError):
        check_key(key)


def test_put_is_atomic_and_capped(case: Case) -> None:
    store = case.store
    store.put("snapshots/1/history-000000000001", b"abc")
    with pytest.raises(BlobTooLarge, match="more than 4 bytes"):
        store.put_stream("snapshots/1/history-000000000002", [b"abc", b"de"], max_bytes=4)
    assert store.list("snapshots") == ["snapshots/1/history-000000000001"]
    assert case.leftovers() == []
    opened = store.open("snapshots/1/history-000000000001")
    assert opened is not None
    size, pieces = opened
    assert (size, b"".join(pieces)) == (3, b"abc")
    assert store.open("snapshots/9/none") is None
    assert store.get("snapshots/9/none") is None
    assert not store.exists("snapshots/9/none")
    store.delete("snapshots/9/none")  # nothing there: no error


def test_a_streamed_blob_over_several_parts_appears_whole_on_commit(case: Case) -> None:
    store = case.store
    body = bytes(range(256)) * ((2 * PART + 12345) // 256)
    writer = store.writer("snapshots/2/tail-000000000100", max_bytes=len(body))
    for at in range(0, len(body), 1 << 20):
        writer.write(body[at : at + (1 << 20)])
    # Parts uploaded, nothing committed: no reader sees it yet.
    assert not store.exists("snapshots/2/tail-000000000100")
    assert store.list("snapshots") == []
    assert writer.commit() == len(body)
    assert case.leftovers() == []
    assert store.get("snapshots/2/tail-000000000100") == body
    opened = store.open("snapshots/2/tail-000000000100", piece_size=1 << 20)
    assert opened is not None
    size, pieces = opened
    read = list(pieces)
    assert size == len(body)
    assert b"".join(read) == body
    assert len(read) > 1 and max(len(piece) for piece in read) <= 1 << 20  # streamed in pieces


def test_a_writer_past_its_cap_or_aborted_leaves_nothing(case: Case) -> None:
    store = case.store
    writer = store.writer("snapshots/3/history-000000000001", max_bytes=PART + 10)
    writer.write(b"x" * PART)  # the S3 writer has begun a multipart upload by now
    with pytest.raises(BlobTooLarge):
        writer.write(b"y" * 11)
    aborted = store.writer("snapshots/3/history-000000000002", max_bytes=3 * PART)
    aborted.write(b"z" * (PART + 1))
    aborted.abort()
    with pytest.raises(BlobTooLarge):
        store.put_stream("snapshots/3/history-000000000003", iter([b"a" * PART, b"b" * PART]), max_bytes=PART)

    def failing() -> Iterator[bytes]:
        yield b"c" * (PART + 1)
        raise RuntimeError("the client went away")

    with pytest.raises(RuntimeError):
        store.put_stream("snapshots/3/history-000000000004", failing(), max_bytes=3 * PART)
    assert store.list("snapshots") == []
    assert case.leftovers() == []


def test_an_empty_blob_is_a_blob(store: BlobStore) -> None:
    store.put("spool/1/1-10", b"")
    assert store.exists("spool/1/1-10")
    assert store.get("spool/1/1-10") == b""
    assert store.list("spool") == ["spool/1/1-10"]


def test_a_blob_removed_before_it_is_read_fails_the_read(store: BlobStore) -> None:
    store.put("spool/4/1-10", b"data")
    opened = store.open("spool/4/1-10")
    assert opened is not None
    store.delete("spool/4/1-10")
    with pytest.raises(BlobError, match="removed while being read"):
        b"".join(opened[1])


def test_list_size_and_delete_by_prefix_across_pages(store: BlobStore) -> None:
    keys = [f"spool/{r}/{n * 10 + 1}-{n * 10 + 10}" for r in (5, 6) for n in range(7)]
    for i, key in enumerate(keys):
        store.put(key, b"x" * i)
    store.put("spool/55/1-10", b"not under spool/5")
    assert store.list("spool/5") == sorted(keys[:7])
    assert store.size("spool/5") == sum(range(7))
    assert store.size("spool") == sum(range(14)) + len(b"not under spool/5")
    store.delete_prefix("spool/5")
    assert store.list("spool/5") == []
    assert store.list("spool") == sorted([*keys[7:], "spool/55/1-10"])
    assert store.size("spool/404") == 0 and store.list("spool/404") == []
    store.delete_prefix("spool/404")


def test_the_sweep_removes_only_what_writers_left_half_written(case: Case) -> None:
    store = case.store
    store.put("spool/7/1-10", b"kept")
    left = store.writer("spool/7/11-20", max_bytes=3 * PART)
    left.write(b"w" * (PART + 1))  # a coordinator that died here
    other = store.writer("corpus/a.b/1-10/1-10", max_bytes=3 * PART)
    other.write(b"v" * (PART + 1))
    assert len(case.leftovers()) == 2
    if isinstance(store, LocalBlobStore):
        # moto reports every multipart upload as begun in 2010, so only here can one be too young.
        assert store.sweep_temporary("spool", 3600) == 0
    time.sleep(0.05)
    assert store.sweep_temporary("spool", 0.01) == 1
    assert len(case.leftovers()) == 1  # the corpus's, under another prefix
    assert store.list("spool") == ["spool/7/1-10"]
    other.abort()
    left.abort()  # what the dead writer's process would never do: here only to close a file handle
    assert case.leftovers() == []


def test_spool_keeps_chunks_per_range(store: BlobStore) -> None:
    spool = Spool(store)
    spans = chunk_spans(1000, 1999, 300)
    assert spans == [
        ChunkSpan(1000, 1199),
        ChunkSpan(1200, 1499),
        ChunkSpan(1500, 1799),
        ChunkSpan(1800, 1999),
    ]
    assert chunk_spans(1000, 1999, 300, resume_at=1500) == spans[2:]
    for span in spans:
        spool.write(7, span, b"x" * 10)
    spool.write(8, spans[0], b"y")
    assert spool.has(7, spans[1])
    assert spool.read(7, spans[1]) == b"x" * 10
    spool.remove_chunk(7, spans[1])
    assert not spool.has(7, spans[1])
    assert spool.read(7, spans[1]) is None
    assert spool.ranges() == [7, 8]
    assert spool.size() == 31
    spool.remove(7)
    assert spool.ranges() == [8]


def test_snapshots_are_named_by_article_and_epoch_and_pruned(store: BlobStore) -> None:
    snapshots = Snapshots(store, max_bytes=100)
    first, size = snapshots.write(3, "history", 1000, 1, [b"one"])
    second, _ = snapshots.write(3, "history", 2000, 1, [b"two"])
    tail, _ = snapshots.write(3, "tail", 5000, 1, [b"tail"])
    assert size == 3
    # A holder that lost the lane (epoch 1) uploading at its successor's (epoch 2) article leaves the
    # successor's snapshot as it was (issue 14).
    successor, _ = snapshots.write(3, "history", 3000, 2, [b"new"])
    stale, _ = snapshots.write(3, "history", 3000, 1, [b"old"])
    assert stale != successor
    opened = snapshots.open(successor)
    assert opened is not None and b"".join(opened[1]) == b"new"
    snapshots.prune(3, "history", keep={second, successor})
    assert snapshots.open(first) is None
    assert snapshots.open(stale) is None
    assert snapshots.open(second) is not None
    assert snapshots.open(tail) is not None
    with pytest.raises(ValueError, match="lane"):
        snapshots.key(3, "../x", 1, 1)


def test_check_says_what_to_do(case: Case, tmp_path: Path, moto_server: MotoServer) -> None:
    case.store.check()
    if isinstance(case.store, LocalBlobStore):
        blocked = tmp_path / "a-file"
        blocked.write_text("")
        with pytest.raises(BlobError, match="writable data_dir"):
            LocalBlobStore(blocked / "blobs").check()
    else:
        with pytest.raises(BlobError, match="create the bucket"):
            moto_server.store("no-such-bucket-here").check()


# -- S3 only -----------------------------------------------------------------------------------------


def test_s3_keys_live_under_the_prefix_and_foreign_objects_are_ignored(moto_server: MotoServer) -> None:
    bucket = moto_server.new_bucket()
    store = moto_server.store(bucket, "deploy/one")
    neighbour = moto_server.store(bucket, "deploy/one-more")
    store.put("spool/1/1-10", b"a")
    neighbour.put("spool/2/1-10", b"b")
    client = store.client
    client.put_object(Bucket=bucket, Key="deploy/one/spool/3/not a key", Body=b"c")
    names = sorted(o["Key"] for o in client.list_objects_v2(Bucket=bucket)["Contents"])
    assert names == [
        "deploy/one-more/spool/2/1-10",
        "deploy/one/spool/1/1-10",
        "deploy/one/spool/3/not a key",
    ]
    assert store.list("spool") == ["spool/1/1-10"]
    assert neighbour.list("spool") == ["spool/2/1-10"]
    assert Spool(store).ranges() == [1]


def test_s3_a_blob_replaced_while_opened_is_not_mixed(moto_server: MotoServer) -> None:
    store = moto_server.store(moto_server.new_bucket())
    store.put("spool/1/1-10", b"first")
    opened = store.open("spool/1/1-10")
    assert opened is not None
    store.put("spool/1/1-10", b"second, and longer")
    with pytest.raises(BlobError, match="replaced while being read"):
        b"".join(opened[1])


def test_s3_failures_are_blob_errors_without_credentials(moto_server: MotoServer) -> None:
    store = moto_server.store("no-such-bucket-here")
    for call in (
        lambda: store.get("spool/1/1-10"),
        lambda: store.put("spool/1/1-10", b"x"),
        lambda: store.list("spool"),
    ):
        with pytest.raises(BlobError) as raised:
            call()
        assert "s3://no-such-bucket-here" in str(raised.value)
        secret = moto_server.options().secret_access_key
        assert secret is not None
        assert secret not in str(raised.value)
