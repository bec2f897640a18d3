"""Probing releases whose subjects do not name them: their article bodies do (issue 16).

Two kinds of releases are queued: obfuscated ones whose subjects show a PAR2 file (the batch store
queues them with its first segment's message-id), and releases joined from files posted under random
names of their own (catalog/grouping.py queues them with none). A probe (indexing/bodies.py decides,
this fetches, every body through ``fetch_body``: the news pool's BODY):

1. the PAR2 index: the article the subject named, else the first articles of the release's smallest
   files, until one starts with the PAR2 magic; its File Description packets give the real names,
   sizes and 16 KiB hashes;
2. the first article of each file posted under a random name: its yEnc ``name=`` and ``size=``, and
   the MD5 of its first 16 KiB, matched to the PAR2's entries;
3. the release renamed (``name_source`` 'par2' or 'yenc': later merges keep it), its files renamed in
   its segment blob (the NZB then carries the real names) and the map kept (``file_names``, which the
   batch store applies to fragments that come later), its category worked out again from the real
   names.

A third kind, taken after those two (``probe_queue.priority``): releases their subjects name, whose
first archive volume's first article the worker saw (indexing/indexer.py's ``password_candidate``):
``password_probe`` fetches that one article for the ``password`` attribute and leaves the name alone.

At most ``bodies.MAX_ARTICLES`` articles per release; what each probe fetched (articles, bytes) is
kept on its queue row for /metrics and the dashboard. Failures are retried three times, then kept
with the reason. A candidate comes from an edge node: the articles fetched are always the stored
release's own (issue 15).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from usenet_indexer.catalog.batch_store import (
    insert_releases,
    lock_merges,
    release_row,
    search_name,
    stored_fragment,
)
from usenet_indexer.db import Database, Tx
from usenet_indexer.db.database import Fence
from usenet_indexer.indexing import pack_segments, unpack_segments
from usenet_indexer.indexing.bodies import (
    HASH_BYTES,
    MAX_ARTICLES,
    BodyNames,
    FirstPart,
    apply_renames,
    fetch_plan,
    first_part,
    name_files,
    par2_index,
    password,
    release_name,
    set_renames,
    with_members,
)
from usenet_indexer.indexing.bursts import (
    BurstRelease,
    Head,
    Piece,
    SplitFile,
    Walk,
    is_burst,
    pieces,
    releases,
    split_key,
)
from usenet_indexer.indexing.categories import categorize
from usenet_indexer.indexing.fragment import FileFragment
from usenet_indexer.indexing.indexer import first_volume_held
from usenet_indexer.indexing.merge import merge
from usenet_indexer.indexing.par2 import Par2Error, Par2Index, read_par2
from usenet_indexer.logs import get_logger
from usenet_indexer.nntp.yenc import YEncDecoded, YEncError, decode

log = get_logger(__name__)

MAX_ATTEMPTS = 3
STALE_SECONDS = 600.0  # a probe "working" this long was abandoned by a coordinator that died
FETCHES_AT_ONCE = 4  # a probe's BODY requests in flight: the pool is shared with the prefetcher


class ProbeFailed(Exception):
    pass


@dataclass(frozen=True, slots=True)
class ProbeResult:
    key: str
    name: str | None
    error: str | None
    articles: int = 0
    bytes: int = 0
    files_renamed: int = 0
    password: bool | None = None  # a password probe's answer (None: unknown)


def name_from_par2(par2: bytes) -> tuple[str, list[str]]:
    """The release name the PAR2 describes (its main files' common base) and every file name."""
    try:
        index = read_par2(par2)
    except Par2Error as error:
        raise ProbeFailed(f"no PAR2 in the article: {error}") from None
    names = [f.name for f in index.files if f.name]
    if not names:
        raise ProbeFailed("the PAR2 describes no file")
    name = release_name(names)
    if name is None:
        raise ProbeFailed("the PAR2 names only obfuscated files")
    return name, names


@dataclass
class _Cost:
    articles: int = 0
    bytes: int = 0
    parts: list[FirstPart] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)  # fetches that failed (a missing article)


def _prefix(held: dict[int, bytes]) -> bytes:
    """The file's bytes from its start, as far as the parts in ``held`` (by begin offset) join up."""
    out = bytearray()
    while len(out) + 1 in held and held[len(out) + 1]:
        out += held[len(out) + 1]
    return bytes(out)


def _contiguous(held: dict[int, bytes]) -> int:
    return len(_prefix(held))


class Prober:
    """Takes queued releases, fetches what names them through ``fetch_body`` (the NNTP pool's BODY),
    renames them; failures are retried up to MAX_ATTEMPTS, then kept with the reason."""

    def __init__(
        self,
        db: Database,
        fetch_body: Callable[[str], Awaitable[bytes]],
        *,
        # 8 a round: a probe of a release under random names fetches up to 32 articles (~24 MB), and a
        # round is cut off after PROBE_ROUND_SECONDS (coordinator/loops/probe.py), its probes left "working"
        # until STALE_SECONDS; a full round runs again at once.
        batch: int = 8,
        fence: Fence | None = None,
    ) -> None:
        self.db = db
        self.fetch_body = fetch_body
        self.batch = batch
        self.fence = fence  # the probe loop's (coordinator/loops/runner.py)
        self._taken_back: int | None = None  # the loop's epoch whose abandoned probes were queued again

    def take(self, n: int | None = None, skip: Sequence[str] = ()) -> list[dict[str, object]]:
        with self.db.transaction(fence=self.fence) as tx:
            epoch = self.fence.epoch() if self.fence is not None else None
            if epoch is not None and epoch != self._taken_back:
                # The probe loop claimed anew: probes an earlier holder left "working" queued again now.
                # A coordinator killed mid-round left them for STALE_SECONDS, and the run resumed after
                # it waited ten minutes on them (issue 17's recovery test, one run in five).
                tx.execute(
                    "probes_abandoned",
                    {"error": "abandoned: the coordinator probing it stopped", "max_attempts": MAX_ATTEMPTS},
                )
                self._taken_back = epoch
            taking = self.batch if n is None else n
            return tx.run("probe_take", {"n": taking, "stale": STALE_SECONDS, "skip": tx.array(list(skip))})

    def _files_of(self, key: str) -> tuple[FileFragment, ...]:
        return unpack_segments(bytes(self._release_row(key)["segments"]))

    async def _first_part(self, posted: str, message_id: str, cost: _Cost) -> FirstPart | None:
        """The first article of a file, decoded; None when it is not yEnc (counted all the same)."""
        # The catalog keeps message-ids without brackets (as NZB files want them); BODY needs them.
        bracketed = message_id if message_id.startswith("<") else f"<{message_id}>"
        body = await self.fetch_body(bracketed)
        cost.articles += 1
        cost.bytes += len(body)
        try:
            decoded = decode(body)
        except YEncError:
            return None
        part = first_part(posted, decoded.data, decoded.name, decoded.size, decoded.begin)
        cost.parts.append(part)
        return part

    async def _tolerant(self, posted: str, message_id: str, cost: _Cost) -> FirstPart | None:
        """``_first_part``, a failed fetch kept instead of raised: one file's missing first article
        must not cost the names the others give."""
        try:
            return await self._first_part(posted, message_id, cost)
        except Exception as error:  # the news server: missing article, timeouts, dropped connections
            cost.errors.append(error)
            return None

    async def _read(
        self, key: str, par2_message_id: str, cost: _Cost, files: Sequence[FileFragment]
    ) -> BodyNames:
        mid = par2_message_id.strip("<>")
        if mid and not any(mid in f.message_id_list() for f in files):
            raise ProbeFailed(f"{mid[:100]!r} is not an article of the release")
        plan = fetch_plan(files, mid)
        index = None
        tried = 0
        for posted, message_id in plan.par2:
            tried += 1
            if mid:  # the subject's PAR2 file: a missing article fails the probe (retried later)
                part = await self._first_part(posted, message_id, cost)
            else:
                part = await self._tolerant(posted, message_id, cost)
            if part is not None and part.par2 is not None and part.par2.files:
                index = part.par2
                break
            if mid:  # the subject's PAR2 file, which is not one
                raise ProbeFailed("the PAR2 article holds no PAR2 file description")
        # The small files not reached are read like the others: their first articles may name them.
        rest = [*plan.par2[tried:], *plan.others] if not mid else list(plan.others)
        limit = asyncio.Semaphore(FETCHES_AT_ONCE)

        async def one(posted: str, message_id: str) -> None:
            async with limit:
                await self._tolerant(posted, message_id, cost)

        await asyncio.gather(*(one(posted, m) for posted, m in rest))
        index = index or par2_index(cost.parts)
        found = name_files(cost.parts, index)
        if found.name is None and cost.errors and not cost.parts:
            raise cost.errors[0]  # nothing read at all: the server's error says why (retried later)
        if found.name is None:
            what = "a PAR2 index" if index is not None else f"no PAR2 index in {len(plan.par2)} small files"
            raise ProbeFailed(
                f"the bodies name nothing: {what}, {len(found.renames)} of {len(files)} files named "
                f"by their first articles ({len(cost.errors)} not fetched)"
            )
        return await self._set_and_password(files, index, found, cost)

    async def _set_and_password(
        self, files: Sequence[FileFragment], index: Par2Index | None, found: BodyNames, cost: _Cost
    ) -> BodyNames:
        """The members of an obfuscated set renamed by their suffixes, and whether the first archive
        volume is passworded (its first article fetched if no probe read it, within the cap)."""
        assert found.name is not None
        par2_names = [f.name for f in index.files] if index is not None else []
        unread = [f.name for f in files if f.name not in found.renames]
        # The probe may run before the set's other members are stored: the index file's own name then
        # ties the random base to the release (the batch store renames the rest as they come).
        index_file = next((p.posted for p in cost.parts if p.par2 is not None and p.par2 is index), None)
        renames = {**set_renames(unread, par2_names, found.name, index_file), **found.renames}
        known = {f.name: renames.get(f.name, f.name) for f in files}
        locked, fetch = password(cost.parts, known)
        if fetch is not None and cost.articles < MAX_ARTICLES:
            first = next((f for f in files if f.name == fetch and f.parts and f.parts[0] == 1), None)
            if first is not None:
                await self._tolerant(fetch, first.message_id_list()[0], cost)
                locked, _ = password(cost.parts, known)
        names = tuple(sorted({*found.files, *renames.values()}))
        return replace(found, renames=renames, files=names, password=locked)

    async def probe(self, key: str, par2_message_id: str, attempt: int = MAX_ATTEMPTS) -> ProbeResult:
        """``attempt``: this probe's, from 1 (a burst's walk takes what it could read only on the last)."""
        cost = _Cost()
        try:
            files = await asyncio.to_thread(self._files_of, key)
            if is_burst(files):
                return await self._burst(key, files, cost, final=attempt >= MAX_ATTEMPTS)
            found = await self._read(key, par2_message_id, cost, files)
        except ProbeFailed as failed:
            return ProbeResult(key, None, str(failed), cost.articles, cost.bytes)
        except Exception as error:  # the news server: missing article, timeouts, dropped connections
            return ProbeResult(key, None, f"{type(error).__name__}: {error}", cost.articles, cost.bytes)
        assert found.name is not None
        renamed = await asyncio.to_thread(self._rename, key, found, cost)
        return ProbeResult(key, found.name, None, cost.articles, cost.bytes, renamed)

    async def password_probe(self, key: str, answered: str | None = None) -> ProbeResult:
        """A release its subjects name (a candidate with an archive's article, indexing/indexer.py's
        ``password_candidate``): the first article of its first archive volume, as the stored release
        has it now, read for the ``password`` attribute. One article; the name is left as it is; what
        the headers cannot tell leaves the attribute unknown. A fetch that fails is retried.

        ``answered``: the article a probe of this release last read (its queue row's). Asked again
        because another archive set's first volume came (the batch store's ``probe_enqueue``), it
        reads nothing when the main set's first volume is still that article and the answer is kept."""
        cost = _Cost()
        read: str | None = None
        try:
            row = await asyncio.to_thread(self._release_row, key)
            files = unpack_segments(bytes(row["segments"]))
            first = first_volume_held(files)
            if first is not None and first.message_id_list()[0] == answered and row["password"] is not None:
                await asyncio.to_thread(self._store_password, key, None, None, cost)
                return ProbeResult(key, None, None, password=bool(row["password"]))
            known = {f.name: f.name for f in files}
            locked: bool | None = None
            if first is not None:
                read = first.message_id_list()[0]
                await self._first_part(first.name, read, cost)
                locked, _ = password(cost.parts, known)
        except ProbeFailed as failed:
            return ProbeResult(key, None, str(failed), cost.articles, cost.bytes)
        except Exception as error:  # the news server: missing article, timeouts, dropped connections
            return ProbeResult(key, None, f"{type(error).__name__}: {error}", cost.articles, cost.bytes)
        if not await asyncio.to_thread(self._store_password, key, locked, read, cost):
            again = "asked again: another archive set came while it read"
            return ProbeResult(key, None, again, cost.articles, cost.bytes)
        return ProbeResult(key, None, None, cost.articles, cost.bytes, password=locked)

    def _release_row(self, key: str) -> dict[str, Any]:
        with self.db.transaction(write=False) as tx:
            row = tx.one("release_segments_by_key", {"key": key})
        if row is None:
            raise ProbeFailed("the release is not in the catalog (yet)")
        return row

    def _store_password(self, key: str, locked: bool | None, read: str | None, cost: _Cost) -> bool:
        """The answer stored, unless the release's first volume is no longer the one read: a batch
        stored while the article was fetched brought a larger set (its candidate found this probe
        working and was dropped), so the release is queued again instead. False then."""
        with self.db.transaction(fence=self.fence) as tx:
            if read is not None:
                _lock_release(tx, key)
                row = tx.one("release_segments_by_key", {"key": key})
                first = (
                    first_volume_held(unpack_segments(bytes(row["segments"]))) if row is not None else None
                )
                if first is not None and first.message_id_list()[0] != read:
                    tx.execute("probe_requeue", {"key": key, "articles": cost.articles, "bytes": cost.bytes})
                    return False
            if locked is not None:
                tx.execute("release_password", {"key": key, "password": locked})
            done = {"key": key, "read": read, "articles": cost.articles, "bytes": cost.bytes}
            tx.execute("password_probe_done", done)
        return True

    async def _yenc(self, piece: Piece, cost: _Cost) -> YEncDecoded | None:
        """A burst's article fetched and decoded; None when missing or not yEnc (counted all the same)."""
        try:
            body = await self.fetch_body(f"<{piece.message_id}>")
        except Exception as error:  # the news server: missing article, timeouts, dropped connections
            cost.errors.append(error)
            cost.articles += 1
            return None
        cost.articles += 1
        cost.bytes += len(body)
        try:
            return decode(body)
        except YEncError:
            return None

    async def _burst(
        self, key: str, files: Sequence[FileFragment], cost: _Cost, *, final: bool = True
    ) -> ProbeResult:
        """A release joined from loose runs: split into files by their first articles' headers and
        sizes, and into releases by the PAR2 indexes among them (indexing/bursts.py), each named and
        stored; articles of no release stay in this one, unnamed. The cap: MAX_ARTICLES, and as many
        again for each PAR2 recovery set found (a burst may hold several releases of its poster)."""
        items = pieces(files)
        walk = Walk(items)
        parts: dict[int, FirstPart] = {}
        heads: dict[int, bytes] = {}  # a first part's first HASH_BYTES, for files whose part is shorter
        sets: set[bytes] = set()
        while (index := walk.want()) is not None:
            decoded = await self._yenc(items[index], cost)
            head = None
            if decoded is not None:
                head = Head(
                    decoded.name, decoded.size, decoded.part, decoded.total, decoded.begin, decoded.end
                )
            if decoded is not None and head is not None and head.first:
                part = first_part(
                    items[index].message_id, decoded.data, decoded.name, decoded.size, decoded.begin
                )
                parts[index] = part
                heads[index] = decoded.data[:HASH_BYTES]
                if part.par2 is not None and part.par2.recovery_set_ids:
                    sets.add(part.par2.recovery_set_ids[0])
                    walk.cap = MAX_ARTICLES * (1 + len(sets))
            walk.give(index, head)
        # Files whose first part is shorter than 16 KiB, hashed over their next parts: several at once.
        limit = asyncio.Semaphore(FETCHES_AT_ONCE)

        async def hashed(split: SplitFile, first: FirstPart) -> None:
            async with limit:
                if cost.articles < walk.cap:
                    parts[split.pieces[0]] = await self._hashed(
                        items, split, first, heads[split.pieces[0]], cost, walk.cap
                    )

        short = [
            (split, first)
            for split in walk.files
            if (first := parts.get(split.pieces[0])) is not None
            and first.head_md5 is None
            and first.par2 is None
            and first.volume is None  # a PAR2 file joins its set by its set id, never by a hash
        ]
        await asyncio.gather(*(hashed(split, first) for split, first in short))
        if cost.errors and not final:
            # An article not fetched is a piece the walk could not place: the split would depend on the
            # news server's moment (a timeout under load). Retried; the last attempt takes what it read.
            error = cost.errors[0]
            return ProbeResult(
                key,
                None,
                f"{len(cost.errors)} articles not fetched ({type(error).__name__}: {error})",
                cost.articles,
                cost.bytes,
            )
        by_file = {n: parts[f.pieces[0]] for n, f in enumerate(walk.files) if f.pieces[0] in parts}
        found = releases(items, walk.files, by_file)
        if not found:
            if cost.errors and not parts:
                error = cost.errors[0]
                return ProbeResult(key, None, f"{type(error).__name__}: {error}", cost.articles, cost.bytes)
            return ProbeResult(
                key,
                None,
                f"the burst names nothing: {len(walk.files)} files split from {len(items)} articles "
                f"({len(walk.unplaced)} unplaced, {cost.articles} fetched), {len(sets)} PAR2 sets",
                cost.articles,
                cost.bytes,
            )
        # Passworded? Each release's first archive volume, where its first article was read.
        locked = [password(list(by_file.values()), release.names)[0] for release in found]
        # A part posted again (its header names a file already split, at a part it has) is dropped:
        # the file has that part, and a file holds one segment a part.
        reposted = {items[i].message_id for i in walk.repeats}
        seen = {p.message_id for p in items}
        await asyncio.to_thread(self._split, key, found, locked, reposted, seen, cost)
        names = ", ".join(r.name for r in found)
        return ProbeResult(key, names, None, cost.articles, cost.bytes, sum(len(r.files) for r in found))

    async def _hashed(
        self, items: Sequence[Piece], split: SplitFile, part: FirstPart, data: bytes, cost: _Cost, cap: int
    ) -> FirstPart:
        """``part`` with the MD5 of its file's first 16 KiB, read from the file's next parts where its
        first is shorter (the PAR2 match needs it: a size alone is never taken for a name)."""
        want = min(HASH_BYTES, part.size)
        held = {1: data}  # begin= offset -> the part's bytes; placed by offset, whatever the order posted
        for k in split.pieces[1:]:
            if _contiguous(held) >= want or cost.articles >= cap:
                break
            decoded = await self._yenc(items[k], cost)
            if decoded is not None and decoded.begin is not None and decoded.begin <= want:
                held[decoded.begin] = decoded.data
        joined = _prefix(held)
        if len(joined) < want:
            return part  # a part missing: no hash rather than a wrong one
        return replace(part, head_md5=hashlib.md5(joined[:want], usedforsecurity=False).digest())

    def _split(
        self,
        key: str,
        found: Sequence[BurstRelease],
        locked: Sequence[bool | None],
        reposted: set[str],
        seen: set[str],
        cost: _Cost,
    ) -> None:
        """The burst release replaced by the releases found in it (merged into one of the same key
        where the burst was cross-posted and its other group's copy was split first); what they do not
        hold stays under the burst's key, unnamed."""
        with self.db.transaction(fence=self.fence) as tx:
            _lock_release(tx, key)
            rows = tx.run("releases_by_keys", {"keys": tx.array([key])})
            if not rows:
                tx.execute("probe_done", {"key": key, "articles": cost.articles, "bytes": cost.bytes})
                return
            burst = stored_fragment(rows[0])
            group_name = str(rows[0]["group_name"])
            placed: set[str] = set(reposted)
            for release, state in zip(found, locked, strict=True):
                mids = [m for f in release.files for m in f.message_id_list()]
                placed.update(mids)
                fragment = replace(
                    burst,
                    key=split_key(release.files),
                    name=release.name,
                    file_total=release.file_total,
                    first_article=min(a for f in release.files for a in f.articles),
                    last_article=max(a for f in release.files for a in f.articles),
                    obfuscated=False,
                    files=release.files,
                )
                held = tx.run("releases_by_keys", {"keys": tx.array([fragment.key])})
                if held:
                    merged = merge(stored_fragment(held[0]), replace(fragment, name=str(held[0]["name"])))
                    tx.execute("release_update", {**release_row(merged, group_name), "id": held[0]["id"]})
                    files = merged.files
                else:
                    insert_releases(tx, [release_row(fragment, group_name)])
                    files = fragment.files
                category = categorize(release.name, [f.name for f in files])
                tx.execute(
                    "release_probed",
                    {
                        "key": fragment.key,
                        "name": release.name,
                        "search_name": search_name(release.name),
                        "source": "par2",
                        "category": category.id,
                        "season": category.season,
                        "episode": category.episode,
                        "year": category.year,
                        "resolution": category.resolution,
                        "segments": pack_segments(files, level=1),
                        "file_names": None,
                        "password": state,
                    },
                )
            rest = tuple(f for f in burst.files if f.message_ids.decode() not in placed)
            if rest:
                left = replace(burst, files=rest, file_total=len(rest) + 1)
                tx.execute("release_update", {**release_row(left, group_name), "id": rows[0]["id"]})
            else:
                tx.execute("release_delete", {"key": key})
            tx.execute("probe_done", {"key": key, "articles": cost.articles, "bytes": cost.bytes})
            if any(f.message_ids.decode() not in seen for f in rest):
                # Articles joined into the burst while this probe read it (a cross-post's copy from
                # another group): probed again, with them.
                tx.execute("probe_again", {"key": key})

    def _cut_off(self, keys: list[str]) -> None:
        """Probes still "working" when their round was cut off: queued again at once, as an attempt
        (they stayed "working" until STALE_SECONDS, ten minutes, and a probe too slow for any round
        was retried for ever). One that finished meanwhile is left as it is."""
        with self.db.transaction(fence=self.fence) as tx:
            tx.executemany(
                "probe_failed",
                [
                    {
                        "key": key,
                        "error": "cut off: the probe round's time ran out",
                        "max_attempts": MAX_ATTEMPTS,
                        "articles": 0,
                        "bytes": 0,
                    }
                    for key in keys
                ],
            )
        log.warning("probe.cut_off", probes=len(keys))

    def _rename(self, key: str, found: BodyNames, cost: _Cost) -> int:
        """The release and its files renamed, under the group's merge lock (a batch merging into the
        release meanwhile would otherwise be overwritten by the blob read before it); files renamed."""
        assert found.name is not None
        with self.db.transaction(fence=self.fence) as tx:
            _lock_release(tx, key)
            rows = tx.run("releases_by_keys", {"keys": tx.array([key])})
            if not rows:  # gone meanwhile (joined into another release): nothing to name
                tx.execute("probe_done", {"key": key, "articles": cost.articles, "bytes": cost.bytes})
                return 0
            row = rows[0]
            stored = stored_fragment(row)
            # A file merged in since the probe read the release is renamed with its set (with_members).
            held, files = apply_renames(
                stored.files, with_members(found.renames, (f.name for f in stored.files))
            )
            known = json.loads(row["file_names"]) if row["file_names"] else {}
            known.update(held)
            names = sorted({*found.files, *(f.name for f in files)})
            category = categorize(found.name, names)
            packed = pack_segments(files, level=1) if held else bytes(row["segments"])
            tx.execute(
                "release_probed",
                {
                    "key": key,
                    "name": found.name,
                    "search_name": search_name(found.name),
                    "source": found.source,
                    "category": category.id,
                    "season": category.season,
                    "episode": category.episode,
                    "year": category.year,
                    "resolution": category.resolution,
                    "segments": packed,
                    "file_names": json.dumps(known, sort_keys=True) if known else None,
                    "password": found.password,
                },
            )
            tx.execute("probe_done", {"key": key, "articles": cost.articles, "bytes": cost.bytes})
        return len(held)

    async def run_once(self, refill_seconds: float = 0.0) -> list[ProbeResult]:
        """One round: up to ``batch`` candidates probed concurrently and, for ``refill_seconds``, each
        one that ends making room for the next queued (a round of 8 waited for its slowest, and the
        demo's 1,300 probes drained at ~27 a second). A round cut off (the probe loop bounds it,
        coordinator/loops/probe.py) gives its unfinished probes back as an attempt failed."""
        refill_until = time.monotonic() + refill_seconds
        rows = self.take()
        more = len(rows) >= self.batch
        running: dict[asyncio.Future[ProbeResult], str] = {}
        results: list[ProbeResult] = []
        try:
            while rows or running:
                for row in rows:
                    running[asyncio.ensure_future(self._one(row))] = str(row["release_key"])
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                ended = [task.result() for task in done]
                for task in done:
                    del running[task]
                self._record(ended)
                results.extend(ended)
                rows = []
                if more and time.monotonic() < refill_until:
                    rows = self.take(len(done), skip=[r.key for r in results])
                    more = len(rows) >= len(done)
        except BaseException:
            for task in running:
                task.cancel()
            if running:
                self._cut_off(list(running.values()))
            raise
        return results

    def _one(self, row: dict[str, object]) -> Awaitable[ProbeResult]:
        key = str(row["release_key"])
        if row.get("archive_message_id") is not None and not row["par2_message_id"]:
            return self.password_probe(key, str(row["archive_message_id"]))
        return self.probe(key, str(row["par2_message_id"]), int(str(row["attempts"])))

    def _record(self, results: list[ProbeResult]) -> None:
        """Failures queued again (or failed for good), and every outcome logged."""
        failed = [r for r in results if r.error is not None]
        if failed:
            with self.db.transaction(fence=self.fence) as tx:
                tx.executemany(
                    "probe_failed",
                    [
                        {
                            "key": r.key,
                            "error": (r.error or "")[:500],
                            "max_attempts": MAX_ATTEMPTS,
                            "articles": r.articles,
                            "bytes": r.bytes,
                        }
                        for r in failed
                    ],
                )
        for result in results:
            if result.error is None and result.name is None:
                log.info(
                    "probe.password", release=result.key, password=result.password, articles=result.articles
                )
            elif result.error is None:
                log.info(
                    "probe.named",
                    release=result.key,
                    name=result.name,
                    files_renamed=result.files_renamed,
                    articles=result.articles,
                    bytes=result.bytes,
                )
            else:
                log.warning("probe.failed", release=result.key, error=result.error, articles=result.articles)


def _lock_release(tx: Tx, key: str) -> None:
    """The merge locks of release ``key``'s group, taken before its row is read: the batch store's
    order (group, then stripes), so that a batch merging into the release meanwhile is not
    overwritten by what the probe read before it."""
    head = tx.one("release_group_by_key", {"key": key})
    group = None if head is None else tx.one("group_by_name", {"name": str(head["group_name"])})
    if head is not None and group is not None:
        lock_merges(tx, int(group["id"]), {str(head["group_name"])})
