"""The corpus: captured groups' overview kept for good, so ranges can be re-indexed without the server.

Keys: ``corpus/<group>/<range start>-<range end>/<chunk from>-<chunk to>``; the group name is checked
against the newsgroup pattern before it becomes part of a key.
"""

from __future__ import annotations

from dataclasses import dataclass

from usenet_indexer.articles import ChunkSpan, check_group_name
from usenet_indexer.storage.blobs import BlobStore
from usenet_indexer.storage.spool import span_key

ROOT = "corpus"


@dataclass(frozen=True, slots=True)
class CorpusRange:
    group: str
    start: int
    end: int

    @property
    def owner(self) -> str:
        return f"{check_group_name(self.group)}/{int(self.start):012d}-{int(self.end):012d}"


class Corpus:
    def __init__(self, blobs: BlobStore) -> None:
        self.blobs = blobs

    @staticmethod
    def key(where: CorpusRange, span: ChunkSpan) -> str:
        return span_key(ROOT, where.owner, span)

    def has(self, where: CorpusRange, span: ChunkSpan) -> bool:
        return self.blobs.exists(self.key(where, span))

    def read(self, where: CorpusRange, span: ChunkSpan) -> bytes | None:
        return self.blobs.get(self.key(where, span))

    def write(self, where: CorpusRange, span: ChunkSpan, data: bytes) -> None:
        self.blobs.put(self.key(where, span), data)

    def remove_chunk(self, where: CorpusRange, span: ChunkSpan) -> None:
        self.blobs.delete(self.key(where, span))

    def size(self) -> int:
        return self.blobs.size(ROOT)
