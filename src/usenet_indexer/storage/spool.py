"""The spool: leased and planned ranges' chunks, fetched ahead of the workers, removed when done.

A chunk is one span of a range's article numbers (``chunk_articles`` of them, aligned like ranges), its
overview compressed as the prefetcher stored it (see wire/chunks.py). Keys: ``spool/<range>/<from>-<to>``.
"""

from __future__ import annotations

from usenet_indexer.articles import ChunkSpan
from usenet_indexer.storage.blobs import BlobStore

ROOT = "spool"


def span_key(root: str, owner: str, span: ChunkSpan) -> str:
    return f"{root}/{owner}/{span.name}"


class Spool:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    @staticmethod
    def key(range_id: int, span: ChunkSpan) -> str:
        return span_key(ROOT, str(int(range_id)), span)

    def has(self, range_id: int, span: ChunkSpan) -> bool:
        return self.blobs.exists(self.key(range_id, span))

    def read(self, range_id: int, span: ChunkSpan) -> bytes | None:
        return self.blobs.get(self.key(range_id, span))

    def write(self, range_id: int, span: ChunkSpan, data: bytes) -> None:
        self.blobs.put(self.key(range_id, span), data)

    def remove_chunk(self, range_id: int, span: ChunkSpan) -> None:
        self.blobs.delete(self.key(range_id, span))

    def remove(self, range_id: int) -> None:
        self.blobs.delete_prefix(f"{ROOT}/{int(range_id)}")

    def ranges(self) -> list[int]:
        """Ranges with something spooled (the orphan sweep compares them with the store)."""
        return sorted({int(key.split("/")[1]) for key in self.blobs.list(ROOT)})

    def size(self) -> int:
        return self.blobs.size(ROOT)
