"""Group lanes' window snapshots: one per group and lane, replaced atomically by each PUT."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from usenet_indexer.storage.blobs import BlobStore, BlobWriter

ROOT = "snapshots"


class Snapshots:
    def __init__(self, blobs: BlobStore, max_bytes: int) -> None:
        self.blobs = blobs
        self.max_bytes = max_bytes

    @staticmethod
    def key(group_id: int, lane: str, next_article: int, epoch: int, kind: str = "window") -> str:
        # The article in the name: a new snapshot never overwrites the one the store still points to
        # (a flushed window at the same article gets its own kind for the same reason). The lane's epoch
        # too: a holder that just lost the lane writes its blob before its record is refused, and at the
        # same article it overwrote its successor's snapshot (issue 14).
        if lane not in ("history", "tail"):
            raise ValueError(f"lane: history or tail, not {lane!r}")
        if kind not in ("window", "flushed"):
            raise ValueError(f"snapshot kind: window or flushed, not {kind!r}")
        suffix = "" if kind == "window" else f"-{kind}"
        return f"{ROOT}/{int(group_id)}/{lane}-{int(next_article):012d}-e{int(epoch)}{suffix}"

    def write(
        self,
        group_id: int,
        lane: str,
        next_article: int,
        epoch: int,
        pieces: Iterable[bytes],
        kind: str = "window",
    ) -> tuple[str, int]:
        key = self.key(group_id, lane, next_article, epoch, kind)
        return key, self.blobs.put_stream(key, pieces, max_bytes=self.max_bytes)

    def writer(
        self, group_id: int, lane: str, next_article: int, epoch: int, kind: str = "window"
    ) -> tuple[str, BlobWriter]:
        key = self.key(group_id, lane, next_article, epoch, kind)
        return key, self.blobs.writer(key, max_bytes=self.max_bytes)

    def open(self, location: str) -> tuple[int, Iterator[bytes]] | None:
        return self.blobs.open(location)

    def prune(self, group_id: int, lane: str, keep: set[str]) -> None:
        """The lane's snapshots the store no longer points to."""
        for key in self.blobs.list(f"{ROOT}/{int(group_id)}"):
            if key not in keep and key.split("/")[-1].startswith(f"{lane}-"):
                self.blobs.delete(key)
