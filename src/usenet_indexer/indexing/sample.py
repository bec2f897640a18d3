"""Realistic overview lines from planned postings: for tests, the benchmark and demos. Pure and seeded.

A plan is a list of releases (multi-file rar + par2 sets, single files, obfuscated sets, cross-posts);
``post()`` turns it into articles the way a busy group receives them: several posters at once, their
parts interleaved, some parts out of order, some posted twice, some never, and article numbers the
server skipped (cancelled articles). ``overview_line()`` writes an article as a server's OVER line.
The plan is also the expected result: golden tests compare what the indexer assembles against it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from email.utils import formatdate
from functools import lru_cache

_TITLES = (
    "Quiet.Harbor",
    "The.Long.Road.Home",
    "Midnight.Signal",
    "Iron.Valley",
    "Paper.Moons",
    "Seven.Bridges",
    "Northern.Lights",
    "Glass.Garden",
)
_SHOWS = ("Harbor.Watch", "The.Night.Desk", "Field.Notes", "Dust.and.Echo")
_GROUPS_TAGS = ("GRP", "TEAM", "FLUX", "NTb", "SPARKS", "ETHEL")
_POSTERS = (
    "poster@example.com (Poster)",
    "Yenc@power-post.org (YEnc-PP-A&A)",
    "anon <anon@anon.invalid>",
    "uploader@news.example (Uploader)",
    "bot-77@example.net",
)


@dataclass(frozen=True, slots=True)
class PlannedFile:
    name: str
    index: int
    parts_total: int
    part_size: int


@dataclass(frozen=True, slots=True)
class PlannedRelease:
    """A release as its poster posts it."""

    collection: str  # the name the indexer should give it (before cleaning)
    poster: str
    style: str  # subject format, see _subject()
    files: tuple[PlannedFile, ...]
    groups: tuple[str, ...]  # cross-posted to these (Xref)
    kind: str  # movie, tv, music, book, pc, obfuscated, single
    request_id: str | None = None

    @property
    def file_total(self) -> int:
        """The file counter the subjects carry (0 for styles without one)."""
        return 0 if self.style in ("quoted", "bare") else len(self.files)


@dataclass(frozen=True, slots=True)
class Article:
    number: int
    subject: str
    poster: str
    date: int
    message_id: str  # without brackets
    size: int
    groups: tuple[str, ...]
    release: int  # index into the plan
    file: int  # index into the release's files
    part: int


@dataclass(slots=True)
class Posting:
    """Articles in number order, and the numbers the server has no article for."""

    articles: list[Article] = field(default_factory=list)
    first: int = 0
    last: int = 0


def _rar_set(
    base: str, volumes: int, par2_volumes: int, part_total: int, extras: bool
) -> list[tuple[str, int]]:
    files = [(f"{base}.part{i:0{max(2, len(str(volumes)))}d}.rar", part_total) for i in range(1, volumes + 1)]
    files.append((f"{base}.par2", 1))
    block = 1
    for _ in range(par2_volumes):
        files.append((f"{base}.vol{block - 1:02d}+{block:02d}.par2", max(1, part_total // 8)))
        block *= 2
    if extras:
        files.append((f"{base}.nfo", 1))
        files.append((f"{base}.sfv", 1))
    return files


def plan(rng: random.Random, count: int, group: str, *, max_parts: int = 60) -> list[PlannedRelease]:
    """``count`` releases of every kind the indexer should handle."""
    releases: list[PlannedRelease] = []
    for n in range(count):
        kind = rng.choice(("movie", "tv", "music", "book", "pc", "obfuscated", "single", "movie", "tv"))
        tag = rng.choice(_GROUPS_TAGS)
        parts = rng.randint(3, max_parts)
        style = rng.choice(("name_counter", "counter", "quoted", "request", "file_of"))
        request = None
        if kind == "movie":
            res = rng.choice(("720p", "1080p", "2160p", "480p"))
            base = f"{rng.choice(_TITLES)}.{2000 + n % 25}.{res}.BluRay.x264-{tag}"
            files = _rar_set(base, rng.randint(2, 8), rng.randint(1, 3), parts, rng.random() < 0.7)
        elif kind == "tv":
            res = rng.choice(("720p", "1080p", "2160p", "SDTV"))
            base = f"{rng.choice(_SHOWS)}.S{1 + n % 9:02d}E{1 + n % 20:02d}.{res}.WEB.h264-{tag}"
            files = _rar_set(base, rng.randint(2, 5), rng.randint(1, 2), parts, rng.random() < 0.5)
        elif kind == "music":
            base = f"Artist {n} - Album {n} ({2000 + n % 24}) [FLAC]"
            files = [(f"{i:02d} - Track {i}.flac", parts) for i in range(1, rng.randint(3, 8))]
            files.append((f"Artist {n} - Album {n}.par2", 1))
            style = rng.choice(("name_counter", "file_of"))
        elif kind == "book":
            base = f"Author{n} - A Book Title {n} ({2010 + n % 14}) EPUB"
            files = [(f"A.Book.Title.{n}.epub", rng.randint(1, 4)), (f"A.Book.Title.{n}.nfo", 1)]
            style = "name_counter"
        elif kind == "pc":
            base = f"Some.Software.v{n % 9}.{n % 7}-{tag}"
            files = _rar_set(base, rng.randint(2, 4), 1, parts, True)
        elif kind == "obfuscated":
            base = "".join(rng.choice("0123456789abcdef") for _ in range(24))
            files = _rar_set(base, rng.randint(2, 6), rng.randint(1, 2), parts, False)
            style = rng.choice(("counter", "quoted"))
        else:  # a single file posted on its own
            res = rng.choice(("720p", "1080p"))
            base = f"{rng.choice(_TITLES)}.{2000 + n % 25}.{res}.WEB-DL.x264-{tag}"
            files = [(f"{base}.mkv", parts * 3)]
            style = rng.choice(("quoted", "bare"))
        if style == "request":
            request = str(100_000 + n)
        groups = (group,) if rng.random() < 0.7 else tuple(sorted({group, "alt.binaries.misc"}))
        planned = tuple(
            PlannedFile(name, index, total, rng.choice((384_000, 640_000, 768_000, 716_800)))
            for index, (name, total) in enumerate(files, start=1)
        )
        releases.append(
            PlannedRelease(
                collection=base,
                poster=f"{n}-{rng.choice(_POSTERS)}" if rng.random() < 0.5 else rng.choice(_POSTERS),
                style=style,
                files=planned,
                groups=groups,
                kind=kind,
                request_id=request,
            )
        )
    return releases


def subject(release: PlannedRelease, f: PlannedFile, part: int) -> str:
    """The subject a posting tool writes for part ``part`` of file ``f``."""
    n = len(release.files)
    width = len(str(n))
    counter = f"[{f.index:0{width}d}/{n}]"
    if release.style == "name_counter":
        return f'{release.collection} - {counter} - "{f.name}" yEnc ({part}/{f.parts_total})'
    if release.style == "counter":
        return f'{counter} - "{f.name}" yEnc ({part}/{f.parts_total})'
    if release.style == "request":
        return (
            f"[{release.request_id}]-[FULL]-[#a.b.teevee]-[ {release.collection} ]-{counter} - "
            f'"{f.name}" yEnc ({part}/{f.parts_total})'
        )
    if release.style == "file_of":
        return f'{release.collection} - File {f.index} of {n} - "{f.name}" yEnc ({part}/{f.parts_total})'
    if release.style == "bare":
        return f"{f.name} yEnc ({part}/{f.parts_total})"
    return f'"{f.name}" yEnc ({part}/{f.parts_total})'


def post(
    releases: list[PlannedRelease],
    rng: random.Random,
    *,
    first: int = 1_000_000,
    start_time: int = 1_700_000_000,
    concurrent: int = 4,
    shuffle: float = 0.05,
    duplicate: float = 0.01,
    missing: float = 0.01,
    cancelled: float = 0.005,
) -> Posting:
    """The articles a group receives while ``concurrent`` posters post the plan at once."""
    streams: list[list[tuple[int, int, int]]] = []
    for r, release in enumerate(releases):
        stream = [(r, i, p) for i, f in enumerate(release.files) for p in range(1, f.parts_total + 1)]
        # Posting tools send several parts at once over many connections: neighbours swap places.
        for k in range(len(stream) - 1):
            if rng.random() < shuffle:
                stream[k], stream[k + 1] = stream[k + 1], stream[k]
        stream = [item for item in stream if rng.random() >= missing]
        stream += [item for item in stream if rng.random() < duplicate]  # reposted parts, at the end
        streams.append(stream)
    posting = Posting(first=first)
    number = first
    now = start_time
    active: list[list[tuple[int, int, int]]] = []
    waiting = list(reversed(streams))
    while active or waiting:
        while waiting and len(active) < concurrent:
            active.append(list(reversed(waiting.pop())))
        stream = rng.choice(active)
        r, i, p = stream.pop()
        if not stream:
            active.remove(stream)
        while rng.random() < cancelled:
            number += 1  # an article the server no longer has: a gap
        release = releases[r]
        f = release.files[i]
        now += rng.choice((0, 0, 1, 1, 2))
        size = f.part_size if p < f.parts_total else max(1, f.part_size // 3)
        posting.articles.append(
            Article(
                number=number,
                subject=subject(release, f, p),
                poster=release.poster,
                date=now,
                message_id=f"part{p}of{f.parts_total}.{rng.getrandbits(64):016x}@{r}.powerpost.local",
                size=size + rng.randint(0, 400),
                groups=release.groups,
                release=r,
                file=i,
                part=p,
            )
        )
        number += 1
    posting.last = number - 1
    return posting


@lru_cache(maxsize=4096)
def _date(when: int) -> str:
    return formatdate(when)  # ~3 µs, and neighbouring articles share their second


def overview_line(article: Article, message_id: str | None = None) -> bytes:
    """The article as a line of OVER output in RFC 3977's default order, with Xref:full (and
    ``message_id``, without brackets, instead of the article's when given)."""
    xref = " ".join(f"{g}:{article.number + k}" for k, g in enumerate(article.groups))
    return (
        f"{article.number}\t{article.subject}\t{article.poster}\t{_date(article.date)}\t"
        f"<{message_id or article.message_id}>\t\t{article.size}\t{article.size // 128}\t"
        f"Xref: news.example.com {xref}"
    ).encode()


def unobfuscated(release: PlannedRelease) -> str:
    """The name an obfuscated release had before its poster hid it (what its PAR2 index names; for
    other releases their collection name). Derived from the hex name, so the plan's random sequence
    is the same as before this existed."""
    if release.kind != "obfuscated":
        return release.collection
    h = int(release.collection, 16)
    title = _TITLES[h % len(_TITLES)]
    year = 2000 + (h >> 8) % 25
    resolution = ("720p", "1080p", "2160p")[(h >> 16) % 3]
    return f"{title}.{year}.{resolution}.BluRay.x264-{_GROUPS_TAGS[(h >> 24) % len(_GROUPS_TAGS)]}"


def unobfuscated_file(release: PlannedRelease, f: PlannedFile) -> str:
    """A file's name before obfuscation (see :func:`unobfuscated`)."""
    if release.kind == "obfuscated" and f.name.startswith(release.collection):
        return unobfuscated(release) + f.name[len(release.collection) :]
    return f.name


def chunk_text(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\r\n" for line in lines)


def chunks(posting: Posting, size: int) -> list[tuple[int, int, bytes]]:
    """The posting's overview as (from, to, inflated text) chunks of ``size`` article numbers."""
    by_number = {a.number: overview_line(a) for a in posting.articles}
    out = []
    for start in range(posting.first, posting.last + 1, size):
        end = min(start + size - 1, posting.last)
        lines = [by_number[n] for n in range(start, end + 1) if n in by_number]
        out.append((start, end, chunk_text(lines)))
    return out


__all__ = [
    "Article",
    "PlannedFile",
    "PlannedRelease",
    "Posting",
    "chunk_text",
    "chunks",
    "overview_line",
    "plan",
    "post",
    "subject",
    "unobfuscated",
    "unobfuscated_file",
]
