"""One chunk from the news server to storage: fetch, pack, write, record. Shared by the prefetcher and
the corpus fill.

- **Fetch** (on the news loop): ``OVER``/``XZVER``/… of the chunk's articles, compressed when the server
  can. A compressed reply that does not inflate (the client checks every one: cut short, damaged) is
  stored nowhere; the chunk is fetched again at once with compression off. Servers cut the same reply
  short the same way every time (seed 000, range 161820), so asking again compressed would not help.
- **Pack** (on a storage thread: deflating 5 MB takes ~10 ms, which would stall every connection on
  the loop): a compressed reply is kept exactly as sent, tagged with its format; a plain one (plain OVER,
  or COMPRESS DEFLATE, whose session stream cannot be cut into chunks) is deflated here.
- **Write** atomically (the blob store writes a temporary file and renames it), then **record** it in
  one transaction: ``fetched_chunks`` (gaps counted once per chunk, however often it is fetched),
  ``spooled_chunks``, and for a corrupt path's plain copy ``plain_chunks.fetched_plain_at``.
"""

from __future__ import annotations

import errno
import zlib
from dataclasses import dataclass

from usenet_indexer.articles import ChunkSpan
from usenet_indexer.db import Tx
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.client import OverviewChunk
from usenet_indexer.nntp.errors import CompressedReplyCorrupt
from usenet_indexer.nntp.pool import NNTPPool
from usenet_indexer.storage.corpus import Corpus, CorpusRange
from usenet_indexer.storage.spool import Spool
from usenet_indexer.wire.chunks import ChunkFormat, deflate_plain, pack_chunk

log = get_logger(__name__)

FORMATS = {"zlib": ChunkFormat.ZLIB, "gzip": ChunkFormat.GZIP, "deflate": ChunkFormat.RAW_DEFLATE}
DISK_FULL = {errno.ENOSPC, errno.EDQUOT}


class DiskFull(OSError):
    """Storage refused a write for lack of space; nothing of the chunk was left behind."""


@dataclass(frozen=True, slots=True)
class ChunkTarget:
    """Where a range's chunks go: its spool, or the corpus for a captured range."""

    range_id: int
    group: str
    start: int
    end: int
    capture: bool

    @property
    def corpus_range(self) -> CorpusRange:
        return CorpusRange(self.group, self.start, self.end)


@dataclass(frozen=True, slots=True)
class Fetched:
    span: ChunkSpan
    chunk: OverviewChunk
    plain: bool  # fetched with compression off

    @property
    def gaps(self) -> int:
        return max(0, self.span.last - self.span.first + 1 - self.chunk.lines)


async def fetch_chunk(pool: NNTPPool, group: str, span: ChunkSpan, *, plain: bool = False) -> Fetched:
    """The chunk's overview from the primary server (the pool retries dropped connections)."""
    if not plain:
        try:
            return Fetched(span, await pool.over_chunk(group, span.first, span.last), False)
        except CompressedReplyCorrupt as error:
            log.warning(
                "fetch.compressed_corrupt",
                group=group,
                chunk=span.first,
                error=str(error),
                action="nothing stored; fetching it again uncompressed",
            )
    return Fetched(span, await pool.over_chunk(group, span.first, span.last, compress=False), True)


def pack(chunk: OverviewChunk, level: int) -> bytes:
    """The stored chunk (wire/chunks.py): a compressed reply as sent, a plain one deflated here."""
    if chunk.encoding == "plain":
        return deflate_plain(chunk.data, level)
    return pack_chunk(FORMATS[chunk.encoding], chunk.data)


def write(spool: Spool, corpus: Corpus, target: ChunkTarget, span: ChunkSpan, data: bytes) -> None:
    """Write atomically; a full disk raises DiskFull (the blob store has removed its temporary file)."""
    try:
        if target.capture:
            corpus.write(target.corpus_range, span, data)
        else:
            spool.write(target.range_id, span, data)
    except OSError as error:
        if error.errno in DISK_FULL:
            raise DiskFull(
                error.errno, f"no space left for chunk {span.name} of range {target.range_id}"
            ) from error
        raise


def record(tx: Tx, range_id: int, fetched: Fetched, stored: bytes, *, spooled: bool) -> None:
    """Record a chunk written (``stored``, its bytes as written): its gaps once, one more spooled chunk
    (``spooled``), a plain copy with its CRC-32 (a corrupt report is matched against it)."""
    span, chunk = fetched.span, fetched.chunk
    params = {
        "range_id": range_id,
        "chunk_from": span.first,
        "chunk_to": span.last,
        "lines": chunk.lines,
        "gaps": fetched.gaps,
        "bytes": len(stored),
        "encoding": chunk.encoding,
        "plain_crc": zlib.crc32(stored) if fetched.plain else None,
    }
    if tx.one("fetched_chunk_insert", params) is not None and fetched.gaps:
        tx.execute("range_add_gaps", params)
    if spooled:
        tx.execute("range_chunk_spooled", params)
    if fetched.plain:
        # Only a chunk the corrupt path listed has a row to mark; a cut-short reply's copy has none.
        tx.execute("plain_chunk_fetched", params)
