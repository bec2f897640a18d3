"""Grouping loose files: releases whose files each carry a random name of their own (issue 16). Pure.

``[1/6] - "fe4cf18d550791a496480fbaf1c6aa3b" yEnc (1/12)``, then ``[2/6] - "812813ce…" yEnc (1/12)``:
the subject rules read each file as a release of its own (its collection is its random name), so the
catalog holds six releases of "1 of 6 files". Such a release is *loose*: one file, of a file total N > 1,
an obfuscated name, and the file's own counter k (0 ≤ k ≤ N: posting tools number an NFO or an
SFV [0/N]). The coordinator joins loose releases that
were posted together, because a worker sees only its range and a release can span ranges and workers.

What joins them (``bursts``, then ``split``):

- the same poster (normalised) and the same file total N;
- a posting burst: sorted by first article, a file joins the burst when it starts at most
  ``GAP_ARTICLES`` articles after the furthest article the burst reached, and its first article's date
  is at most ``GAP_SECONDS`` after the latest date the burst reached;
- within a burst, each k once per release: a release is cut where a k comes back, once it holds
  every k from 1 to N (a [0/N] file after it is the next release's: tools post it first), or where a
  file starts more than ``WINDOW_SECONDS`` after the release's first one. Two
  releases of one poster posted back to back are cut where the second one's k = 1 (or any k the first
  already had) comes.

The thresholds, and why:

- ``GAP_ARTICLES`` = 10,000. Other posters' articles interleave with a release's; in a busy group
  (a.b.teevee sees ~10 articles a second) a poster's pause of a few minutes between two files is a few
  thousand articles. It is also how far past a burst the indexing must have gone before the burst is
  joined (below), so it is kept to a fraction of a range.
- ``GAP_SECONDS`` = 600. Posting tools post a release's files one after the other without pausing; a
  pause of ten minutes is a new posting session.
- ``WINDOW_SECONDS`` = 6 hours: one release posted at 20 Mbit/s for 50 GB; beyond it, a k that did not
  come back is still taken as a new release.

Deterministic whatever the cuts. Fragments merge by key whatever the order (merge.py), so once every
article a burst and its neighbours (``GAP_ARTICLES`` either side) hold is indexed, the loose releases in
that stretch are final and the grouping of them is a function of their set alone (sorted, ties broken
by key). ``Settled`` says which articles are indexed for good; the coordinator (catalog/grouping.py)
joins a burst only when its whole stretch is settled. A file whose own parts are spread more than
``GAP_ARTICLES`` apart is beyond this guarantee.

A joined release's key (``group_key``) is made from the smallest message-id of its segments: the same
whatever the order, the cuts or the group it was indexed from. The members' keys are kept as aliases
of it, so that a member's fragment indexed again (reindex, a corrupt chunk fetched again) merges into
the joined release instead of bringing the member back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from usenet_indexer.indexing.fragment import ReleaseFragment
from usenet_indexer.indexing.merge import merge
from usenet_indexer.indexing.naming import normalise_poster
from usenet_indexer.indexing.window import DEFAULT_HORIZON

GAP_ARTICLES = 10_000
GAP_SECONDS = 600
WINDOW_SECONDS = 6 * 3600
# Articles reach a server late with their posting Date (propagation, a backlog): a burst at the end of
# a group is taken as final only once it is this much older than the GAP_SECONDS a later file needs.
PROPAGATION_SECONDS = 3600
ENDLESS = 2**63 - 1


@dataclass(frozen=True, slots=True)
class LooseFile:
    """A loose release as grouping sees it: a file of a release announced with ``file_total`` files."""

    key: str
    poster: str  # normalised
    file_total: int
    first_article: int
    last_article: int
    first_date: int | None
    last_date: int | None
    index: int = -1  # the file's k; -1 where not read yet (the catalog's light rows)
    # Every group it was posted to (Xref), its own included; () when only its own is known. A
    # cross-post's articles are numbered in whichever group's range indexed them: its burst is
    # final only when final in each of these groups (catalog/grouping.py).
    groups: tuple[str, ...] = ()

    def order(self) -> tuple[int, int, str]:
        return (self.first_article, self.last_article, self.key)


def is_loose(release: ReleaseFragment) -> bool:
    """One file of a release announced with more, under an obfuscated name, with its own file counter."""
    if len(release.files) != 1 or release.file_total < 2 or not release.obfuscated:
        return False
    index = release.files[0].index
    return 0 <= index <= release.file_total


def loose_file(release: ReleaseFragment) -> LooseFile:
    return LooseFile(
        key=release.key,
        poster=normalise_poster(release.poster),
        file_total=release.file_total,
        first_article=release.first_article,
        last_article=release.last_article,
        first_date=release.first_date,
        last_date=release.last_date,
        index=release.files[0].index if release.files else 0,
        groups=release.groups,
    )


def bursts(files: Iterable[LooseFile]) -> list[tuple[LooseFile, ...]]:
    """The posting bursts of ``files``: per poster and file total, files chained by article gap and
    date gap (see the module's docstring). A function of the set: the same whatever the order given."""
    by_poster: dict[tuple[str, int], list[LooseFile]] = {}
    for f in files:
        by_poster.setdefault((f.poster, f.file_total), []).append(f)
    out: list[tuple[LooseFile, ...]] = []
    for ident in sorted(by_poster):
        chain: list[LooseFile] = []
        reach = -1
        latest: int | None = None
        for f in sorted(by_poster[ident], key=LooseFile.order):
            joins = bool(chain) and f.first_article - reach <= GAP_ARTICLES
            if joins and latest is not None and f.first_date is not None:
                joins = f.first_date - latest <= GAP_SECONDS
            if not joins and chain:
                out.append(tuple(chain))
                chain, reach, latest = [], -1, None
            chain.append(f)
            reach = max(reach, f.last_article)
            for date in (f.first_date, f.last_date):
                if date is not None and (latest is None or date > latest):
                    latest = date
        if chain:
            out.append(tuple(chain))
    return out


def stretch(burst: Sequence[LooseFile]) -> tuple[int, int]:
    """The articles that must be indexed for good before ``burst`` is final: its own and
    ``GAP_ARTICLES`` either side (a file there would have joined it)."""
    low = min(f.first_article for f in burst)
    high = max(f.last_article for f in burst)
    return max(0, low - GAP_ARTICLES), min(ENDLESS, high + GAP_ARTICLES)


def split(burst: Sequence[LooseFile]) -> list[tuple[LooseFile, ...]]:
    """The releases of one burst (files with their k known): each k once per release (so at most
    ``file_total`` + 1 files, k = 0 … N), starting within ``WINDOW_SECONDS`` of the release's first."""
    releases: list[tuple[LooseFile, ...]] = []
    current: list[LooseFile] = []
    seen: set[int] = set()
    started: int | None = None
    for f in sorted(burst, key=LooseFile.order):
        late = started is not None and f.first_date is not None and f.first_date - started > WINDOW_SECONDS
        # Complete (every k from 1 to N): what follows is another release's, even a k = 0, which tools
        # post first (an NFO numbered [0/N] after a release is the next one's).
        complete = len(seen - {0}) >= f.file_total
        if current and (f.index in seen or complete or late):
            releases.append(tuple(current))
            current, seen, started = [], set(), None
        current.append(f)
        seen.add(f.index)
        if started is None:
            started = f.first_date
    if current:
        releases.append(tuple(current))
    return releases


def group_key(release: ReleaseFragment) -> str:
    """A joined release's key: from the smallest message-id among its segments, which no cut, order or
    group changes. Prefixed so that it can never be a subject key (indexer.release_key)."""
    smallest = min((mid for f in release.files for mid in f.message_id_list()), default="")
    text = "joined\0" + smallest
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def join(members: Sequence[ReleaseFragment]) -> ReleaseFragment:
    """The members merged into one release under their ``group_key``."""
    first = replace(members[0], key="")
    joined = first
    for member in members[1:]:
        joined = merge(joined, replace(member, key=""))
    return replace(joined, key=group_key(joined))


def join_runs(runs: Sequence[ReleaseFragment]) -> ReleaseFragment:
    """A burst of loose runs (indexing/runs.py) as one release to probe, under its ``group_key``.

    Its files are still one per article; the probe splits them into files and releases by their
    bodies (indexing/bursts.py). Until then it is named by its key (hex: ``obfuscated``, whatever
    merging recomputes; a random subject of 24 letters and digits did not always look obfuscated), and
    its file total is one more than the files it holds: the files it will have are not known, so it is
    never taken for complete (a downloader would get each part as a file)."""
    joined = join(runs)
    return replace(
        joined,
        name=joined.key,
        obfuscated=True,
        file_total=len(joined.files) + 1,
        collection="",
        request_id=None,
    )


@dataclass(frozen=True, slots=True)
class Joined:
    """A release joined from loose ones: ``release`` under its new key, and the keys it replaces."""

    release: ReleaseFragment
    members: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Grouping:
    joined: tuple[Joined, ...]
    alone: tuple[str, ...]  # loose releases of a final burst that no other file joins: never looked at again


def group_loose(releases: Iterable[ReleaseFragment], settled: Settled | None = None) -> Grouping:
    """The loose releases among ``releases`` joined where their bursts are final (all of them when
    ``settled`` is None). A function of the set of releases and of ``settled``."""
    loose = {r.key: r for r in releases if is_loose(r)}
    files = [loose_file(r) for r in loose.values()]
    joined: list[Joined] = []
    alone: list[str] = []
    for burst in bursts(files):
        if settled is not None and not settled.final(burst):
            continue
        for release in split(burst):
            keys = tuple(sorted(f.key for f in release))
            if len(keys) == 1:
                alone.append(keys[0])
            else:
                joined.append(Joined(join([loose[k] for k in keys]), keys))
    return Grouping(tuple(joined), tuple(sorted(alone)))


# ---- which articles are indexed for good --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RangeState:
    """A range as the catalog's readiness sees it (``lane``: the lane it was granted through, if any)."""

    start: int
    end: int
    next: int
    status: str  # planned, leased, done, failed
    lane: str | None = None


@dataclass(frozen=True, slots=True)
class LaneState:
    """A group lane's last recorded snapshot: its position, and whether it was the flushed empty window."""

    next: int
    flushed: bool


class Settled:
    """Which article numbers of a group are indexed for good: their fragments are in the catalog and
    no later batch of this indexing will bring more of them.

    - Below the group's first range: never to be indexed (beyond the backfill), so nothing will come.
    - In a range done or failed, or before a live range's resume point: stored with its batch.
    - In a range read through a group lane: the lane's window holds a release open until it is
      complete or ``horizon`` articles behind (window.py), and a loose file is never complete on its
      own. So it is settled once the lane's stored position is ``horizon`` past it, or the lane was
      flushed (its open releases stored, an empty window recorded) past it.
    - Past the group's last range: not posted or not planned yet. When the ranges reach the group's
      high watermark (``high_water``, the planner's last reading), what comes after is posted after
      it: a burst whose latest date is before ``quiet_before`` (the caller's now, less GAP_SECONDS and
      PROPAGATION_SECONDS) can get no later file, and is final (``final``) without waiting for
      GAP_ARTICLES more articles, which in a quiet group can take days.
    """

    def __init__(
        self,
        ranges: Sequence[RangeState],
        lanes: Mapping[str, LaneState] | None = None,
        *,
        horizon: int = DEFAULT_HORIZON,
        high_water: int | None = None,
        quiet_before: int | None = None,
    ) -> None:
        pending: list[tuple[int, int]] = []
        lanes = lanes or {}
        self._future_from: int | None = None
        self.quiet_before = quiet_before
        if not ranges:
            pending.append((0, ENDLESS))
            self.start = ENDLESS
        else:
            self.start = min(r.start for r in ranges)
            end = max(r.end for r in ranges)
            if high_water is not None and end >= high_water:
                self._future_from = end + 1  # held apart: ``final`` may look past it
            else:
                pending.append((end + 1, ENDLESS))
        for r in ranges:
            if r.status in ("planned", "leased") and r.next <= r.end:
                pending.append((max(r.start, r.next), r.end))
        # A lane's stored position: where the first article its ranges still have to store is.
        stored: dict[str, int] = {}
        for r in ranges:
            if r.lane is not None:
                first = (
                    max(r.start, r.next) if r.status in ("planned", "leased") and r.next <= r.end else ENDLESS
                )
                stored[r.lane] = min(stored.get(r.lane, ENDLESS), first)
        for r in ranges:
            if r.lane is None:
                continue
            lane = lanes.get(r.lane)
            position = stored.get(r.lane, ENDLESS)
            if lane is not None:
                position = min(position, lane.next)
            low = max(r.start, position - horizon if position < ENDLESS else ENDLESS)
            if lane is not None and lane.flushed:
                low = max(low, lane.next)
            if low <= r.end:
                pending.append((low, r.end))
        self._pending = sorted(pending)

    def covers(self, low: int, high: int) -> bool:
        """Every article ``low``..``high`` settled."""
        if self._future_from is not None and high >= self._future_from:
            return False
        return not any(a <= high and low <= b for a, b in self._pending)

    def final(self, burst: Sequence[LooseFile]) -> bool:
        """``burst`` can change no more: its stretch settled, or settled up to the group's end with
        the burst too old for anything posted since to join it."""
        low, high = stretch(burst)
        if self.covers(low, high):
            return True
        if self._future_from is None or self.quiet_before is None:
            return False
        dates = [d for f in burst for d in (f.first_date, f.last_date) if d is not None]
        if not dates or max(dates) > self.quiet_before:
            return False
        return self.covers(low, self._future_from - 1)


@dataclass(frozen=True, slots=True)
class Retention:
    """Which bursts of loose files and runs are let go without being final (catalog/grouping.py): a
    burst of runs is deleted, one of loose files settled alone (they stay releases of the catalog).

    Runs (indexing/runs.py) wait outside the catalog for their burst to be final; one that never is
    would wait for good, and on a real feed ``loose_runs`` grew with every loose article that never
    became a release (and a loose file was read again by every pass). A burst is let go only whole (a
    run or file of a burst still growing is never taken from it), by the rules that already bound
    what is indexed:

    - retention (the planner's): every article of the burst below the server's low watermark. Its
      bodies are gone, so a probe could not name it nor a downloader fetch it, final or not.
    - the space cap (catalog/space.py): at the cap only tail and stored ranges are leased, so a burst
      waiting on history is final never. One whose last article is more than ``horizon`` articles
      (a lane window's, window.py: its poster is done with it) below the high watermark goes.
    """

    low_water: int | None
    high_water: int | None
    full: bool
    horizon: int = DEFAULT_HORIZON

    def lets_go(self, burst: Sequence[LooseFile], final: bool) -> bool:
        last = max(f.last_article for f in burst)
        if self.low_water is not None and last < self.low_water:
            return True
        if final or not self.full or self.high_water is None:
            return False
        return last < self.high_water - self.horizon


__all__ = [
    "GAP_ARTICLES",
    "GAP_SECONDS",
    "PROPAGATION_SECONDS",
    "WINDOW_SECONDS",
    "Grouping",
    "Joined",
    "LaneState",
    "LooseFile",
    "RangeState",
    "Retention",
    "Settled",
    "bursts",
    "group_key",
    "group_loose",
    "is_loose",
    "join",
    "join_runs",
    "loose_file",
    "split",
    "stretch",
]
