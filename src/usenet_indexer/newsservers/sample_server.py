"""The sample news server: a few groups of generated yEnc postings on a loopback port, for the demo,
tests and benchmarks. It is sample data, not Usenet.

The postings come from ``indexing/sample.py`` with a fixed seed (``sample.Today``): multi-file rar + par2
releases, TV and movie names, music, books, in today's posting styles and their shares (named, noisy
wrappers, PAR2-obfuscated sets, per-file random names, fully random subjects; cross-posts to two of the
sample groups: its docstring says which shares and why); several posters at once, parts out of order,
reposted, missing, and cancelled article numbers. A cross-posted article has a number in each of its
groups, the same overview line (but the number) and the same message-id in both. The scripted server
(``fake_server.py``) speaks NNTP for it; this module is its
:class:`~usenet_indexer.newsservers.fake_server.Feed`.

What is held in memory, per group (a few hundred thousand articles take ~30 MB):

- the overview, as one zlib stream per block of ``block_articles`` article numbers, aligned to
  multiples of it like the coordinator's chunks (``articles.aligned``). An OVER of exactly a block
  with XFEATURE COMPRESS GZIP on is answered with the stored stream as it is: serving costs nothing
  then, and a benchmark of the indexer is not a benchmark of this server. Any other range is
  inflated, cut and (compressed) re-deflated;
- three small integers per article number: which release, file and part it carries (-1: none, a
  cancelled article), and the plan's releases.

Article bodies are made when asked for, from the message-id alone: ``part{p}of{t}.{number}.{group}@…``
(or, for the styles whose tools post random message-ids, ``{16 random hex}.{number}.{group}@…``) names the
article by its number in the group it was first posted to, the arrays name its release, file and part. A
cross-post's second group marks the article ``FOREIGN`` and keeps where it came from. A part's payload is
``PART_BYTES`` of SHAKE-128 output keyed by (group, release, file, part) — the same for a reposted copy —
and is sent yEnc-encoded (``=ybegin``/``=ypart``/``=yend`` with pcrc32) under the file's yEnc name (the
quoted name; the real name for per-file random names; a random one for fully random subjects). What a file
is (PAR2 or payload) is what its real name says. A release's PAR2 index file (``x.par2``) is a real PAR2
index (``indexing/par2_writer.py``) over the release's other files as their parts decode, naming them as
they were before obfuscation: so the probe can name obfuscated releases, and a downloader could verify
what it fetched. A recovery volume (``x.vol0+1.par2``) is laid out as par2cmdline lays one out
(``par2_writer.par2_volume``: its recovery slices, whose bytes are not Reed-Solomon, and the index's
packets), in as many parts as the plan says, of a size that makes its last part a third of the others,
as every other file's is.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
import time
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from usenet_indexer.articles import aligned
from usenet_indexer.compression import zlib_compress
from usenet_indexer.indexing import sample
from usenet_indexer.indexing.naming import FileKind, file_kind
from usenet_indexer.indexing.par2_writer import Par2Input, index_size, par2_index, par2_volume, volume_size
from usenet_indexer.newsservers.fake_server import FakeNNTPServer, FeedArticle, Script
from usenet_indexer.nntp import yenc

__all__ = [
    "SAMPLE_GROUPS",
    "SEED",
    "SampleFeed",
    "SampleGroupSpec",
    "SampleServer",
    "sample_groups",
]

SEED = 2026
PART_BYTES = 3_000  # a part's payload; the overview's Bytes field says what a real part would weigh
DOMAIN = "sample.usenet-indexer.invalid"
RELEASES_PER_PLAN = 50  # a posting of ~10,000 articles: a group ends at most that past its target
_MESSAGE_ID = re.compile(r"^<(?:part\d+of\d+|[0-9a-f]{16})\.(\d+)\.(\d+)@" + re.escape(DOMAIN) + r">$")
_RANDOM_IDS = frozenset({"per_file_random", "fully_random"})  # styles whose tools post random message-ids


@dataclass(frozen=True, slots=True)
class SampleGroupSpec:
    name: str
    first: int  # the group's first article number
    articles: int  # at least this many articles are posted (whole postings: a few more)


# The demo's groups: ~300,000 articles. Article numbers past 2^32 in one, as a modern group's are.
SAMPLE_GROUPS: tuple[SampleGroupSpec, ...] = (
    SampleGroupSpec("alt.binaries.sample.teevee", 5_100_000_001, 120_000),
    SampleGroupSpec("alt.binaries.sample.movies", 2_730_015_001, 100_000),
    SampleGroupSpec("alt.binaries.sample.misc", 870_042_001, 80_000),
)


def sample_groups(scale: float = 1.0) -> tuple[SampleGroupSpec, ...]:
    """The demo's groups with ``scale`` times as many articles (benchmarks, quick tests)."""
    return tuple(replace(g, articles=max(1, round(g.articles * scale))) for g in SAMPLE_GROUPS)


def _start_time() -> int:
    """Posting starts 7 days before today (00:00 UTC): the sample looks recent to a newznab client's
    maxage, and is the same all day."""
    day = 86_400
    return int(time.time()) // day * day - 7 * day


def _zlib(data: bytes) -> bytes:
    return zlib_compress(data, 6)


@dataclass
class _Group:
    spec: SampleGroupSpec
    index: int
    block_articles: int
    first: int = 0
    last: int = 0
    count: int = 0
    blocks: dict[int, bytes] = field(default_factory=dict)  # block start -> zlib of its lines
    release: array[int] = field(default_factory=lambda: array("i"))  # by number - first; -1: none
    file: array[int] = field(default_factory=lambda: array("h"))
    part: array[int] = field(default_factory=lambda: array("i"))
    releases: list[sample.PlannedRelease] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # per release: parts never posted
    # Articles cross-posted here from another group (release -2 in the arrays): number -> (that
    # group's index, the article's number there). A few percent of the articles: a dict is enough.
    foreign: dict[int, tuple[int, int]] = field(default_factory=dict)
    pending: list[bytes] = field(default_factory=list)  # lines of the block being filled
    block: int = -1


FOREIGN = -2  # in _Group.release: an article cross-posted from another group


def _mix(seed: int, group: int, number: int) -> int:
    """64 random-looking bits from (seed, group, number): splitmix64's finaliser."""
    z = (number * 0x9E3779B97F4A7C15 + group * 0xBF58476D1CE4E5B9 + seed) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


class SampleFeed:
    """Generated groups, served by :class:`FakeNNTPServer` (see the module's docstring)."""

    def __init__(
        self,
        groups: Sequence[SampleGroupSpec] = SAMPLE_GROUPS,
        *,
        seed: int = SEED,
        block_articles: int = 20_000,
        start_time: int | None = None,
        live_fraction: float = 0.0,
        live_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if block_articles < 1:
            raise ValueError(f"block_articles must be >= 1, not {block_articles}")
        if not 0.0 <= live_fraction < 1.0 or live_seconds < 0:
            raise ValueError(
                f"live_fraction in [0, 1) and live_seconds >= 0, not {live_fraction}, {live_seconds}"
            )
        self.seed = seed
        self.block_articles = block_articles
        self.start_time = _start_time() if start_time is None else start_time
        # Posted while the server runs: the last live_fraction of each group appears over live_seconds
        # from start_live(), so a reader sees the groups grow (their tail), as a real group does.
        self.live_fraction = live_fraction if live_seconds > 0 else 0.0
        self.live_seconds = live_seconds
        self.clock = clock
        self._live_from: float | None = None
        self._groups: dict[str, _Group] = {}
        self._order: list[_Group] = []
        self._lock = threading.Lock()  # the caches below (the server's loop and tests' threads)
        self._plain: OrderedDict[tuple[str, int], list[bytes]] = OrderedDict()
        self._par2_cache: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        for index, spec in enumerate(groups):
            group = _Group(spec, index, block_articles)
            self._groups[spec.name] = group
            self._order.append(group)
        self._generate()

    # -- generation ------------------------------------------------------------------------------

    def _generate(self) -> None:
        today = sample.Today(
            [(g.spec.name, g.spec.first, g.spec.articles) for g in self._order],
            seed=self.seed,
            start_time=self.start_time,
            releases_per_plan=RELEASES_PER_PLAN,
        )
        for g in self._order:
            g.first = g.spec.first
            g.block = g.first - g.first % self.block_articles
        order = self._order
        for article, home, numbers in today.articles():
            g = order[home]
            number = numbers[0]
            offset = number - g.first
            missing = offset - len(g.release)
            if missing:  # cancelled articles: numbers without one
                g.release.extend([-1] * missing)
                g.file.extend([0] * missing)
                g.part.extend([0] * missing)
            g.release.append(article.release)
            g.file.append(article.file)
            g.part.append(article.part)
            release = today.releases[home][article.release]
            message_id = self._message_id(g, number, release, article.file, article.part)[1:-1]
            if len(numbers) == 1:
                self._add_line(
                    g, number, sample.overview_line(article, message_id, number=number, numbers=numbers)
                )
                continue
            for group, n in zip(article.groups, numbers, strict=True):
                target = self._groups[group]
                if target is not g:
                    gap = n - target.first - len(target.release)
                    if gap:
                        target.release.extend([-1] * gap)
                        target.file.extend([0] * gap)
                        target.part.extend([0] * gap)
                    target.release.append(FOREIGN)
                    target.file.append(0)
                    target.part.append(0)
                    target.foreign[n] = (home, number)
                self._add_line(
                    target, n, sample.overview_line(article, message_id, number=n, numbers=numbers)
                )
        for g in self._order:
            g.releases = today.releases[g.index]
            g.missing = today.missing[g.index]
            self._seal(g, g.block, g.pending)
            g.pending = []
            g.count = sum(1 for r in g.release if r != -1)
            g.last = g.first + len(g.release) - 1

    def _seal(self, group: _Group, block: int, lines: list[bytes]) -> None:
        if lines:
            group.blocks[block] = _zlib(b"".join(line + b"\r\n" for line in lines))

    def _add_line(self, g: _Group, number: int, line: bytes) -> None:
        start = number - number % self.block_articles
        if start != g.block:
            self._seal(g, g.block, g.pending)
            g.pending, g.block = [], start
        g.pending.append(line)

    def _message_id(
        self, g: _Group, number: int, release: sample.PlannedRelease, file: int, part: int
    ) -> str:
        """An article's message-id, with brackets, from its group's index and number there (which the
        server reads back from it). Tools that obfuscate post random ones; the others (PowerPost's
        form) carry the part and the part total."""
        if release.scheme in _RANDOM_IDS:
            return f"<{_mix(self.seed, g.index, number):016x}.{number}.{g.index}@{DOMAIN}>"
        return f"<part{part}of{release.files[file].parts_total}.{number}.{g.index}@{DOMAIN}>"

    # -- what the groups hold --------------------------------------------------------------------

    @property
    def groups(self) -> list[str]:
        return [g.spec.name for g in self._order]

    def articles(self) -> int:
        return sum(g.count for g in self._order)

    def watermarks(self, name: str) -> tuple[int, int]:
        """The group's low and high watermarks once everything is posted."""
        g = self._groups[name]
        return g.first, g.last

    # -- growing groups --------------------------------------------------------------------------

    def start_live(self) -> None:
        """From now on the live part of each group is posted (the server calls it when it starts)."""
        if self._live_from is None:
            self._live_from = self.clock()

    def posted(self) -> bool:
        """Everything posted (always, without a live part)."""
        return self._progress() >= 1.0

    def _progress(self) -> float:
        if not self.live_fraction:
            return 1.0
        if self._live_from is None:
            return 0.0
        return min(1.0, (self.clock() - self._live_from) / self.live_seconds)

    def _high(self, g: _Group) -> int:
        """The group's high watermark now."""
        if not self.live_fraction:
            return g.last
        span = g.last - g.first + 1
        hidden = g.first + int(span * (1.0 - self.live_fraction))
        return hidden - 1 + int((g.last - hidden + 1) * self._progress())

    def releases(self, name: str) -> list[sample.PlannedRelease]:
        """The releases first posted to group ``name`` (a cross-post is listed in its first group)."""
        return list(self._groups[name].releases)

    # -- the truth: what a catalog of the sample should hold -------------------------------------

    def truth(self) -> list[sample.TrueRelease]:
        """Every release posted, as it really is: its style, real name, real files and their sizes (as
        their parts decode), its groups, and whether every part was posted. Ids are those of
        :meth:`release_of`."""
        out = []
        for g in self._order:
            for r, release in enumerate(g.releases):
                files = tuple(
                    sample.TrueFile(f.real, self._true_size(release, f), f.parts_total, f.name, f.yenc)
                    for f in release.files
                )
                out.append(
                    sample.TrueRelease(
                        id=f"{g.index}:{r}",
                        style=release.scheme,
                        name=release.real,
                        files=files,
                        groups=release.groups,
                        poster=release.poster,
                        kind=release.kind,
                        complete=g.missing[r] == 0,
                    )
                )
        return out

    def release_of(self, message_id: str) -> str | None:
        """The id of the release (as in :meth:`truth`) that article ``message_id`` (with or without
        brackets) belongs to; None for one the sample did not post."""
        found = self.carried(message_id)
        return None if found is None else found[0]

    def carried(self, message_id: str) -> tuple[str, sample.PlannedRelease, int, int] | None:
        """What article ``message_id`` (with or without brackets) carries: its release's id (as in
        :meth:`truth`), the release, the index of its file in the release's files, and its part."""
        found = self._locate(message_id if message_id.startswith("<") else f"<{message_id}>")
        if found is None:
            return None
        g, number = found
        offset = number - g.first
        r = g.release[offset]
        return f"{g.index}:{r}", g.releases[r], g.file[offset], g.part[offset]

    def _true_size(self, release: sample.PlannedRelease, f: sample.PlannedFile) -> int:
        if file_kind(f.real) not in (FileKind.PAR2, FileKind.PAR2_VOLUME):
            return self.file_size(f)
        described = [
            (x.real, self.file_size(x))
            for x in release.files
            if file_kind(x.real) not in (FileKind.PAR2, FileKind.PAR2_VOLUME)
        ] or [(release.files[0].real, 0)]
        index = index_size(described, slice_size=PART_BYTES)
        slices = _slices(f.real)
        return index if slices is None else volume_size(index, PART_BYTES, slices[1])

    # -- Feed ------------------------------------------------------------------------------------

    def names(self) -> list[str]:
        return self.groups

    def group(self, name: str) -> tuple[int, int, int] | None:
        g = self._groups.get(name)
        if g is None:
            return None
        high = self._high(g)
        # GROUP's count is an estimate (RFC 3977 6.1.1): the posted share of the group's articles.
        count = g.count if high == g.last else round(g.count * (high - g.first + 1) / (g.last - g.first + 1))
        return count, g.first, high

    def overview_zlib(self, name: str, first: int, last: int) -> bytes | None:
        g = self._groups.get(name)
        if g is None:
            return None
        start = first - first % self.block_articles
        end = start + self.block_articles - 1
        # The stored stream holds exactly the block's articles: served as it is when the request
        # covers all the block's articles and nothing outside it, and all of them are posted.
        if min(end, g.last) > self._high(g):
            return None
        if first >= start and last <= end and first <= max(start, g.first) and last >= min(end, g.last):
            return g.blocks.get(start)
        return None

    def overview(self, name: str, first: int, last: int) -> bytes:
        g = self._groups.get(name)
        if g is None:
            return b""
        first, last = max(first, g.first), min(last, self._high(g))
        out: list[bytes] = []
        for start, end in aligned(first, last, self.block_articles) if first <= last else []:
            block = start - start % self.block_articles
            lines = self._lines(g, block)
            if start <= max(block, g.first) and end >= min(block + self.block_articles - 1, g.last):
                out += lines  # all of the block's articles
            else:
                out += [ln for ln in lines if start <= int(ln[: ln.index(b"\t")]) <= end]
        return b"".join(line + b"\r\n" for line in out)

    def _lines(self, g: _Group, block: int) -> list[bytes]:
        key = (g.spec.name, block)
        with self._lock:
            cached = self._plain.get(key)
            if cached is not None:
                self._plain.move_to_end(key)
                return cached
        data = g.blocks.get(block)
        lines = zlib.decompress(data).split(b"\r\n")[:-1] if data else []
        with self._lock:
            self._plain[key] = lines
            while len(self._plain) > 4:
                self._plain.popitem(last=False)
        return lines

    def message_id(self, name: str, number: int) -> str | None:
        g = self._groups.get(name)
        if g is None or not g.first <= number <= self._high(g):
            return None
        return self._message_id_at(g, number)

    def _message_id_at(self, g: _Group, number: int) -> str | None:
        """The message-id of article ``number`` of ``g``, posted yet or not."""
        if not g.first <= number <= g.last:
            return None
        r = g.release[number - g.first]
        if r == -1:
            return None
        if r == FOREIGN:
            home, number = g.foreign[number]
            g = self._order[home]
            r = g.release[number - g.first]
        offset = number - g.first
        return self._message_id(g, number, g.releases[r], g.file[offset], g.part[offset])

    def article(self, message_id: str, *, head: bool = True) -> FeedArticle | None:
        found = self._locate(message_id)
        if found is None:
            return None
        g, number = found
        offset = number - g.first
        release = g.releases[g.release[offset]]
        index, part = g.file[offset], g.part[offset]
        f = release.files[index]
        # What a file is, is what its real name says: random names have no extension.
        if file_kind(f.real) in (FileKind.PAR2, FileKind.PAR2_VOLUME):
            data = self._par2_file(g, g.release[offset], f)
            size = _part_bytes(len(data), f.parts_total)
            start = (part - 1) * size
            piece = data[start : start + size] if part < f.parts_total else data[start:]
            body = yenc.encode(
                piece, f.yenc, part=part, total=f.parts_total, begin=start + 1, file_size=len(data)
            )
        else:
            data = self.payload(g.spec.name, g.release[offset], index, part, f.parts_total)
            begin = (part - 1) * PART_BYTES + 1
            body = yenc.encode(
                data, f.yenc, part=part, total=f.parts_total, begin=begin, file_size=self.file_size(f)
            )
        # The head needs the article's overview line (a block to inflate): only for ARTICLE and HEAD.
        return FeedArticle(message_id, self._head(g, number, message_id) if head else b"", body)

    def _locate(self, message_id: str) -> tuple[_Group, int] | None:
        match = _MESSAGE_ID.match(message_id)
        if match is None:
            return None
        number, index = (int(x) for x in match.groups())
        if index >= len(self._order):
            return None
        g = self._order[index]
        # Whether or not its first group's live part has reached it: a cross-post may show in its other
        # group's tail first, and a message-id is only known from an overview that listed it.
        if self._message_id_at(g, number) != message_id or g.release[number - g.first] == FOREIGN:
            return None
        return g, number

    def _head(self, g: _Group, number: int, message_id: str) -> bytes:
        start = number - number % self.block_articles
        line = next((ln for ln in self._lines(g, start) if int(ln[: ln.index(b"\t")]) == number), b"")
        fields = line.decode("utf-8", "replace").split("\t")
        subject, poster, date = (fields[1], fields[2], fields[3]) if len(fields) > 3 else ("", "", "")
        xref = fields[8] if len(fields) > 8 else ""
        groups = ",".join(item.split(":")[0] for item in xref.split()[2:]) or g.spec.name
        head = [
            f"Path: {DOMAIN}!not-for-mail",
            f"From: {poster}",
            f"Newsgroups: {groups}",
            f"Subject: {subject}",
            f"Date: {date}",
            f"Message-ID: {message_id}",
            xref,
        ]
        return "".join(h + "\r\n" for h in head if h).encode("utf-8")

    # -- payloads --------------------------------------------------------------------------------

    @staticmethod
    def _size(part: int, total: int) -> int:
        return PART_BYTES if part < total else PART_BYTES // 3

    @staticmethod
    def file_size(f: sample.PlannedFile) -> int:
        """The bytes of a file that is not a PAR2 file, as its parts decode."""
        return (f.parts_total - 1) * PART_BYTES + PART_BYTES // 3

    def payload(self, group: str, release: int, file: int, part: int, total: int) -> bytes:
        """The decoded bytes of part ``part`` of a file (a reposted copy carries the same)."""
        key = f"{self.seed}:{group}:{release}:{file}:{part}".encode()
        return hashlib.shake_128(key).digest(self._size(part, total))

    def file_data(self, group: str, release: int, file: int) -> bytes:
        total = self._groups[group].releases[release].files[file].parts_total
        return b"".join(self.payload(group, release, file, p, total) for p in range(1, total + 1))

    def _par2_file(self, g: _Group, release_index: int, f: sample.PlannedFile) -> bytes:
        """A PAR2 file of the release: the index, or a recovery volume (the module's docstring)."""
        index = self._par2(g, release_index)
        slices = _slices(f.real)
        return index if slices is None else par2_volume(index, *slices)

    def _par2(self, g: _Group, release_index: int) -> bytes:
        key = (g.index, release_index)
        with self._lock:
            cached = self._par2_cache.get(key)
        if cached is not None:
            return cached
        release = g.releases[release_index]
        inputs = [
            Par2Input(f.real, self.file_data(g.spec.name, release_index, i))
            for i, f in enumerate(release.files)
            if file_kind(f.real) not in (FileKind.PAR2, FileKind.PAR2_VOLUME)
        ]
        data = par2_index(inputs or [Par2Input(release.files[0].real, b"")], slice_size=PART_BYTES)
        with self._lock:
            self._par2_cache[key] = data
            while len(self._par2_cache) > 256:
                self._par2_cache.popitem(last=False)
        return data


_VOLUME = re.compile(r"\.vol(\d+)\+(\d+)\.par2$", re.IGNORECASE)


def _slices(name: str) -> tuple[int, int] | None:
    """A recovery volume's (first exponent, count), from its real name; None for the index."""
    match = _VOLUME.search(name)
    return None if match is None else (int(match[1]), int(match[2]))


def _part_bytes(length: int, parts: int) -> int:
    """The part size that cuts ``length`` bytes into ``parts`` parts, the last a third of the others
    (a PAR2 file's length is the layout's, not a whole number of parts): the overview's sizes and
    the parts' yEnc headers then agree, as the walk of a burst needs (indexing/bursts.py)."""
    if parts <= 1:
        return max(1, length)
    return max(1, round(3 * length / (3 * parts - 2)))


class SampleServer:
    """The sample feed served on a loopback port from a thread of its own (its own event loop), so a
    synchronous caller — the ``demo`` command, a test — can start and stop it."""

    def __init__(
        self, feed: SampleFeed, *, host: str = "127.0.0.1", port: int = 0, script: Script | None = None
    ) -> None:
        self.feed = feed
        self.host = host
        self.port = port
        self.script = script
        self.server: FakeNNTPServer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    def start(self) -> int:
        """Listen; returns the port."""
        self._thread = threading.Thread(target=self._main, name="sample-news-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise RuntimeError(f"the sample news server did not start: {self._failure}") from self._failure
        return self.port

    def _main(self) -> None:
        async def serve() -> None:
            self._loop = asyncio.get_running_loop()
            server = FakeNNTPServer(self.script, self.host, feed=self.feed, port=self.port)
            try:
                await server.start()
            except BaseException as error:
                self._failure = error
                self._ready.set()
                return
            self.server = server
            self.port = server.port
            self.feed.start_live()
            self._ready.set()
            # Not ``stopping``: the loop would end, cancelling stop() itself and the sessions it is
            # still closing (CI, a teardown: CancelledError from stop's future).
            await server.stopped.wait()

        asyncio.run(serve())

    def stop(self) -> None:
        loop, server = self._loop, self.server
        if loop is not None and server is not None and not loop.is_closed():
            future = asyncio.run_coroutine_threadsafe(server.stop(), loop)
            future.result(10)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> SampleServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
