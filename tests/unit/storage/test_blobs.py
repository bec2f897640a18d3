from __future__ import annotations

from pathlib import Path

import pytest

from usenet_indexer.articles import ChunkSpan, chunk_spans
from usenet_indexer.storage.blobs import BlobError, LocalBlobStore, check_key
from usenet_indexer.storage.snapshots import Snapshots
from usenet_indexer.storage.spool import Spool


@pytest.mark.parametrize(
    "key", ["", "../x", "spool/../../etc", "a//b", "/abs", "spool/.hidden", "a/b c", "a/.."]
)
def test_keys_that_could_leave_the_root_are_refused(key: str) -> None:
    with pytest.raises(BlobError):
        check_key(key)


def test_put_is_atomic_and_capped(tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path)
    store.put("snapshots/1/history-000000000001", b"abc")
    with pytest.raises(BlobError, match="more than 4 bytes"):
        store.put_stream("snapshots/1/history-000000000002", [b"abc", b"de"], max_bytes=4)
    assert store.list("snapshots") == ["snapshots/1/history-000000000001"]
    assert not any(p.name.startswith(".tmp-") for p in tmp_path.rglob("*"))
    opened = store.open("snapshots/1/history-000000000001")
    assert opened is not None
    size, pieces = opened
    assert (size, b"".join(pieces)) == (3, b"abc")
    assert store.open("snapshots/9/none") is None


def test_spool_keeps_chunks_per_range(tmp_path: Path) -> None:
    spool = Spool(LocalBlobStore(tmp_path))
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


def test_snapshots_are_named_by_article_and_pruned(tmp_path: Path) -> None:
    snapshots = Snapshots(LocalBlobStore(tmp_path), max_bytes=100)
    first, size = snapshots.write(3, "history", 1000, [b"one"])
    second, _ = snapshots.write(3, "history", 2000, [b"two"])
    tail, _ = snapshots.write(3, "tail", 5000, [b"tail"])
    assert size == 3
    snapshots.prune(3, "history", keep={second})
    assert snapshots.open(first) is None
    assert snapshots.open(second) is not None
    assert snapshots.open(tail) is not None
    with pytest.raises(ValueError, match="lane"):
        snapshots.key(3, "../x", 1)
