"""Probing obfuscated releases: the PAR2 index file names the real files.

Releases whose subjects carry hashes or random strings are queued by the batch store with the
message-id of their PAR2 index file's first segment. A probe fetches that article's body, decodes the
yEnc (CRC checked), reads the File Description packets (indexing/par2.py) and renames the release after
its main files; the category is worked out again from the real names. Merges keep a probed name
(``name_source``), whatever later fragments say.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from usenet_indexer.catalog.batch_store import search_name
from usenet_indexer.db import Database
from usenet_indexer.db.database import Fence
from usenet_indexer.indexing import unpack_segments
from usenet_indexer.indexing.categories import categorize
from usenet_indexer.indexing.naming import FileKind, file_kind, looks_obfuscated, release_base
from usenet_indexer.indexing.par2 import Par2Error, read_par2
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.yenc import YEncError, decode

log = get_logger(__name__)

MAX_ATTEMPTS = 3
STALE_SECONDS = 600.0  # a probe "working" this long was abandoned by a coordinator that died


class ProbeFailed(Exception):
    pass


@dataclass(frozen=True, slots=True)
class ProbeResult:
    key: str
    name: str | None
    error: str | None


def name_from_par2(par2: bytes) -> tuple[str, list[str]]:
    """The release name the PAR2 describes (its main files' common base) and every file name."""
    try:
        index = read_par2(par2)
    except Par2Error as error:
        raise ProbeFailed(f"no PAR2 in the article: {error}") from None
    names = [f.name for f in index.files if f.name]
    if not names:
        raise ProbeFailed("the PAR2 describes no file")
    # The base most of the payload files share ("x.part01.rar" … "x.part12.rar" → "x"); par2 and
    # small extras (nfo, sfv) do not vote.
    payload = [n for n in names if file_kind(n) not in (FileKind.PAR2, FileKind.NFO, FileKind.SFV)] or names
    votes = Counter(release_base(n.rsplit("/", 1)[-1]) for n in payload)
    name = votes.most_common(1)[0][0].strip()
    if not name or looks_obfuscated(name):
        raise ProbeFailed(f"the PAR2 names only obfuscated files ({name!r})")
    return name, names


class Prober:
    """Takes queued candidates, fetches their PAR2 bodies through ``fetch_body`` (the NNTP pool's
    BODY), renames the releases; failures are retried up to MAX_ATTEMPTS, then kept with the reason."""

    def __init__(
        self,
        db: Database,
        fetch_body: Callable[[str], Awaitable[bytes]],
        *,
        batch: int = 20,
        fence: Fence | None = None,
    ) -> None:
        self.db = db
        self.fetch_body = fetch_body
        self.batch = batch
        self.fence = fence  # the probe loop's (coordinator/loops.py)

    def take(self) -> list[dict[str, object]]:
        with self.db.transaction(fence=self.fence) as tx:
            return tx.run("probe_take", {"n": self.batch, "stale": STALE_SECONDS})

    def _segment_of(self, key: str, message_id: str) -> None:
        """ProbeFailed unless ``message_id`` is a segment of the stored release ``key``: a candidate
        comes from an edge node, and a probe renames the release from the article it names."""
        with self.db.transaction(write=False) as tx:
            row = tx.one("release_segments_by_key", {"key": key})
        if row is None:
            raise ProbeFailed("the release is not in the catalog (yet)")
        for file in unpack_segments(bytes(row["segments"])):
            if message_id in file.message_id_list():
                return
        raise ProbeFailed(f"{message_id[:100]!r} is not an article of the release")

    async def probe(self, key: str, par2_message_id: str) -> ProbeResult:
        try:
            await asyncio.to_thread(self._segment_of, key, par2_message_id.strip("<>"))
            # The catalog keeps message-ids without brackets (as NZB files want them); BODY needs them.
            bracketed = par2_message_id if par2_message_id.startswith("<") else f"<{par2_message_id}>"
            body = await self.fetch_body(bracketed)
            try:
                data = decode(body).data
            except YEncError as error:
                raise ProbeFailed(f"the PAR2 article does not decode: {error}") from None
            name, files = name_from_par2(data)
        except ProbeFailed as failed:
            return ProbeResult(key, None, str(failed))
        except Exception as error:  # the news server: missing article, timeouts, dropped connections
            return ProbeResult(key, None, f"{type(error).__name__}: {error}")
        category = categorize(name, files)
        with self.db.transaction(fence=self.fence) as tx:
            tx.execute(
                "release_rename",
                {
                    "key": key,
                    "name": name,
                    "search_name": search_name(name),
                    "source": "par2",
                    "category": category.id,
                    "season": category.season,
                    "episode": category.episode,
                    "year": category.year,
                    "resolution": category.resolution,
                },
            )
            tx.execute("probe_done", {"key": key})
        return ProbeResult(key, name, None)

    async def run_once(self) -> list[ProbeResult]:
        """One round: up to ``batch`` candidates probed concurrently."""
        taken = self.take()
        results = await asyncio.gather(
            *(self.probe(str(row["release_key"]), str(row["par2_message_id"])) for row in taken)
        )
        failed = [r for r in results if r.error is not None]
        if failed:
            with self.db.transaction(fence=self.fence) as tx:
                tx.executemany(
                    "probe_failed",
                    [{"key": r.key, "error": r.error[:500], "max_attempts": MAX_ATTEMPTS} for r in failed],  # type: ignore[index]
                )
        for result in results:
            if result.error is None:
                log.info("probe.named", release=result.key, name=result.name)
            else:
                log.warning("probe.failed", release=result.key, error=result.error)
        return list(results)
