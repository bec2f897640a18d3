"""Realistic overview lines from planned postings: for tests, the benchmark and demos. Pure and seeded.

A plan is a list of releases (multi-file rar + par2 sets, single files, obfuscated sets, cross-posts);
``post()`` turns it into articles the way a busy group receives them: several posters at once, their
parts interleaved, some parts out of order, some posted twice, some never, and article numbers the
server skipped (cancelled articles). ``overview_line()`` writes an article as a server's OVER line.
The plan is also the expected result: golden tests compare what the indexer assembles against it.

``plan()`` and ``post()`` make what the indexer has always read (names in the subjects, or one hex
name for a whole set whose PAR2 holds the real names); their output does not change, so golden tests
keep their meaning. ``Today`` (``plan_today()``, ``post_today()``, ``post_groups()``) makes what the
sample news server posts: today's binary groups, where most posts are obfuscated (issue 16).

**Today's styles and their shares** (of releases; ``STYLES``):

- ``named``, 20 %: the name in the subjects, in one of the usual forms (``name [1/8] - "file" yEnc
  (1/50)``, ``"file" yEnc``, request ids, ``File 1 of 8``).
- ``noisy``, 10 %: the usual form wrapped in tags and text, before the ``[k/N]`` and after ``yEnc
  (p/P)``: ``[PRiVATE]-[WtFnZb]-[Name]-[1/8] - "Name.part1.rar" yEnc (1/100)``, ``[TOWN] Name [1/8] -
  "Name.part1.rar" yEnc (1/100) 76800000``, ``>ghost-of-usenet.org< Name [1/8] - "…" yEnc (1/100)
  >www.example.invalid<``. The real names are in the quotes.
- ``par2_obfuscated``, 20 %: one random hex name for the whole set (``[01/15] - "a1b2….part01.rar"
  yEnc (1/60)``), real names only in the PAR2 packets.
- ``per_file_random``, 25 %: every file its own random name, without extension (``[1/6] -
  "fe4cf18d550791a496480fbaf1c6aa3b" yEnc (1/12)``); the real name of each file is in its yEnc
  ``=ybegin … name=`` line and in the PAR2 packets.
- ``fully_random``, 25 %: every article its own random subject, without ``[k/N]`` or ``(p/P)``, and a
  random yEnc name per file; the real names only in the PAR2 packets. What ties the articles
  together: one poster, one burst, equal part sizes within a file and a shorter last part.

and, across all styles, 15 % of releases (``CROSS_POSTED``) cross-posted to a second sample group
(the same articles, message-ids and overview lines in both, the Xref naming both).

Why these shares: indexer operators and downloaders' issue trackers have said for years that most new
binary posts are obfuscated, and posting tools obfuscate by default (ngPost's and Nyuu's random
subjects and message-ids, per-file random names from "obfuscate" options, PAR2 as the only record of
the real names). We know of no published census, so the split is a judgement: 70 % obfuscated in one
of three ways, weighted toward the two random styles the indexer found nothing of before issue 16,
and 30 % with the name visible, a third of it under noise. Cross-posting to two groups is common for
larger posts. The shares are exact, not sampled: each group draws its releases from shuffled decks
of 20 (4 named, 2 noisy, 4 par2_obfuscated, 5 per_file_random, 5 fully_random; 3 of the 20
cross-posted), so a test can check them.

Obfuscated releases are movies, TV, software and single video files (what is obfuscated in practice,
and whose release name is the base of their file names, so a PAR2 can name them); music and books
are posted named or noisy.

A poster posts one release at a time (a posting tool works through its queue): a poster's releases
follow one another, each a burst that other posters' articles interleave with. Parts are equal in
size within a file, the last one shorter; the overview's Bytes vary by a few hundred bytes, as
yEnc's escaping makes them vary.
"""

from __future__ import annotations

import base64
import heapq
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from email.utils import formatdate
from functools import lru_cache

from usenet_indexer.indexing.volumes import volume_names

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
    name: str  # as the subjects quote it ("" where they quote none: fully_random)
    index: int
    parts_total: int
    part_size: int
    real_name: str = ""  # the file's real name, where it differs from ``name`` (the PAR2 names it)
    yenc_name: str = ""  # the name in its yEnc ``=ybegin`` lines, where it differs from ``name``

    @property
    def real(self) -> str:
        return self.real_name or self.name

    @property
    def yenc(self) -> str:
        return self.yenc_name or self.name


@dataclass(frozen=True, slots=True)
class PlannedRelease:
    """A release as its poster posts it."""

    collection: str  # the name the subjects give it (before cleaning; "" where they give none)
    poster: str
    style: str  # subject format, see subject()
    files: tuple[PlannedFile, ...]
    groups: tuple[str, ...]  # cross-posted to these (Xref)
    kind: str  # movie, tv, music, book, pc, obfuscated, single
    request_id: str | None = None
    scheme: str = "named"  # how it is obfuscated: one of STYLES
    real_name: str = ""  # its real name, where the subjects do not carry it
    tag: str = ""  # the random tag a noisy wrapper carries ("WtFnZb")

    @property
    def real(self) -> str:
        """The release's real name: what its subjects or its PAR2 packets say it is."""
        return self.real_name or self.collection

    @property
    def file_total(self) -> int:
        """The file counter the subjects carry (0 for styles without one)."""
        return 0 if self.style in ("quoted", "bare", "random_articles") else len(self.files)


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
    base: str, volumes: int, par2_volumes: int, part_total: int, extras: bool, par2cmdline: bool = False
) -> list[tuple[str, int]]:
    """``par2cmdline``: volumes named as par2cmdline names them (``vol0+1``: padded to the set's widest
    numbers, indexing/volumes.py), as the sample news server lays them out; else always two digits
    (``plan()``'s names, which do not change)."""
    files = [(f"{base}.part{i:0{max(2, len(str(volumes)))}d}.rar", part_total) for i in range(1, volumes + 1)]
    files.append((f"{base}.par2", 1))
    blocks = [(2**k - 1, 2**k) for k in range(par2_volumes)]  # par2cmdline's default: 1, 2, 4 … slices
    names = (
        volume_names(base, blocks)
        if par2cmdline
        else [f"{base}.vol{first:02d}+{count:02d}.par2" for first, count in blocks]
    )
    for name in names:
        files.append((name, max(1, part_total // 8)))
    if extras:
        files.append((f"{base}.nfo", 1))
        files.append((f"{base}.sfv", 1))
    return files


def _content(
    rng: random.Random, kind: str, n: int, tag: str, parts: int, par2cmdline: bool = False
) -> tuple[str, list[tuple[str, int]], tuple[str, ...] | None]:
    """A release's real base name and files, and the subject styles it may be posted in (None: any)."""
    p2 = par2cmdline
    if kind == "movie":
        res = rng.choice(("720p", "1080p", "2160p", "480p"))
        base = f"{rng.choice(_TITLES)}.{2000 + n % 25}.{res}.BluRay.x264-{tag}"
        return base, _rar_set(base, rng.randint(2, 8), rng.randint(1, 3), parts, rng.random() < 0.7, p2), None
    if kind == "tv":
        res = rng.choice(("720p", "1080p", "2160p", "SDTV"))
        base = f"{rng.choice(_SHOWS)}.S{1 + n % 9:02d}E{1 + n % 20:02d}.{res}.WEB.h264-{tag}"
        return base, _rar_set(base, rng.randint(2, 5), rng.randint(1, 2), parts, rng.random() < 0.5, p2), None
    if kind == "music":
        base = f"Artist {n} - Album {n} ({2000 + n % 24}) [FLAC]"
        files = [(f"{i:02d} - Track {i}.flac", parts) for i in range(1, rng.randint(3, 8))]
        files.append((f"Artist {n} - Album {n}.par2", 1))
        return base, files, ("name_counter", "file_of")
    if kind == "book":
        base = f"Author{n} - A Book Title {n} ({2010 + n % 14}) EPUB"
        return (
            base,
            [(f"A.Book.Title.{n}.epub", rng.randint(1, 4)), (f"A.Book.Title.{n}.nfo", 1)],
            ("name_counter",),
        )
    if kind == "pc":
        base = f"Some.Software.v{n % 9}.{n % 7}-{tag}"
        return base, _rar_set(base, rng.randint(2, 4), 1, parts, True, p2), None
    if kind == "obfuscated":
        base = "".join(rng.choice("0123456789abcdef") for _ in range(24))
        files = _rar_set(base, rng.randint(2, 6), rng.randint(1, 2), parts, False, p2)
        return base, files, ("counter", "quoted")
    # a single file posted on its own
    res = rng.choice(("720p", "1080p"))
    base = f"{rng.choice(_TITLES)}.{2000 + n % 25}.{res}.WEB-DL.x264-{tag}"
    return base, [(f"{base}.mkv", parts * 3)], ("quoted", "bare")


def plan(rng: random.Random, count: int, group: str, *, max_parts: int = 60) -> list[PlannedRelease]:
    """``count`` releases of every kind the indexer should handle (as it always has: see the module's
    docstring; the sample news server posts ``plan_today()``'s)."""
    releases: list[PlannedRelease] = []
    for n in range(count):
        kind = rng.choice(("movie", "tv", "music", "book", "pc", "obfuscated", "single", "movie", "tv"))
        tag = rng.choice(_GROUPS_TAGS)
        parts = rng.randint(3, max_parts)
        style = rng.choice(("name_counter", "counter", "quoted", "request", "file_of"))
        request = None
        base, files, styles = _content(rng, kind, n, tag, parts)
        if styles is not None:
            style = styles[0] if len(styles) == 1 else rng.choice(styles)
        if style == "request":
            request = str(100_000 + n)
        groups = (group,) if rng.random() < 0.7 else tuple(sorted({group, "alt.binaries.misc"}))
        planned = tuple(
            PlannedFile(name, index, total, rng.choice((384_000, 640_000, 768_000, 716_800)))
            for index, (name, total) in enumerate(files, start=1)
        )
        real = ""
        if kind == "obfuscated":
            real = _unhidden(base)
            planned = tuple(replace(f, real_name=real + f.name[len(base) :]) for f in planned)
        releases.append(
            PlannedRelease(
                collection=base,
                poster=f"{n}-{rng.choice(_POSTERS)}" if rng.random() < 0.5 else rng.choice(_POSTERS),
                style=style,
                files=planned,
                groups=groups,
                kind=kind,
                request_id=request,
                scheme="par2_obfuscated" if kind == "obfuscated" else "named",
                real_name=real,
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
    if release.style == "noisy_private":
        return (
            f'[PRiVATE]-[{release.tag}]-[{release.collection}]-{counter} - "{f.name}" '
            f"yEnc ({part}/{f.parts_total})"
        )
    if release.style == "noisy_tagged":
        return (
            f'[{release.tag}] {release.collection} {counter} - "{f.name}" yEnc ({part}/{f.parts_total}) '
            f"{f.parts_total * f.part_size}"
        )
    if release.style == "noisy_site":
        return (
            f'>ghost-of-usenet.org< {release.collection} {counter} - "{f.name}" yEnc ({part}/{f.parts_total})'
            f" >www.{release.tag.lower()}.invalid<"
        )
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


def overview_line(
    article: Article,
    message_id: str | None = None,
    *,
    number: int | None = None,
    numbers: Sequence[int] | None = None,
) -> bytes:
    """The article as a line of OVER output in RFC 3977's default order, with Xref:full (and
    ``message_id``, without brackets, instead of the article's when given). ``number`` is its number in
    the group served and ``numbers`` its number in each of ``article.groups`` (the Xref); without
    them, the article's number, and made-up numbers in its other groups."""
    if numbers is None:
        xref = " ".join(f"{g}:{article.number + k}" for k, g in enumerate(article.groups))
    elif len(numbers) == 1:
        xref = f"{article.groups[0]}:{numbers[0]}"
    else:
        xref = " ".join(f"{g}:{n}" for g, n in zip(article.groups, numbers, strict=True))
    return (
        f"{article.number if number is None else number}\t{article.subject}\t{article.poster}\t"
        f"{_date(article.date)}\t<{message_id or article.message_id}>\t\t{article.size}\t"
        f"{article.size // 128}\tXref: news.example.com {xref}"
    ).encode()


# ---- today: what the sample news server posts (issue 16; the module's docstring) ------------------

# Releases of each style in every deck of DECK: the shares are exact.
STYLES: dict[str, int] = {
    "named": 4,
    "noisy": 2,
    "par2_obfuscated": 4,
    "per_file_random": 5,
    "fully_random": 5,
}
DECK = sum(STYLES.values())
CROSS_POSTED_PER_DECK = 3  # of DECK
OBFUSCATED = frozenset({"par2_obfuscated", "per_file_random", "fully_random"})
_NAMED_KINDS = ("movie", "tv", "music", "book", "pc", "single", "movie", "tv")
_OBFUSCATED_KINDS = ("movie", "tv", "movie", "tv", "pc", "single")
_NOISY_STYLES = ("noisy_private", "noisy_tagged", "noisy_site")
_NOISY_TAGS = ("TOWN", "NEW", "ReUp", "HD", "BiRD")
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def deck(rng: random.Random) -> Iterator[tuple[str, bool]]:
    """Endless (style, cross-posted) draws: shuffled decks of DECK with STYLES' counts each."""
    styles = [style for style, count in STYLES.items() for _ in range(count)]
    crossed = [True] * CROSS_POSTED_PER_DECK + [False] * (DECK - CROSS_POSTED_PER_DECK)
    while True:
        rng.shuffle(styles)
        rng.shuffle(crossed)
        yield from zip(list(styles), list(crossed), strict=True)


def _random_name(rng: random.Random, length: int) -> str:
    """Random letters, digits, ``-`` and ``_`` (what obfuscating posting tools write), ``length`` of them."""
    return base64.urlsafe_b64encode(rng.randbytes(length * 3 // 4 + 1)).decode()[:length]


def plan_today(
    rng: random.Random,
    count: int,
    group: str,
    others: Sequence[str],
    draws: Iterator[tuple[str, bool]],
    *,
    first_index: int = 0,
    max_parts: int = 60,
) -> list[PlannedRelease]:
    """``count`` releases in today's styles (``draws``: from :func:`deck`), numbered from
    ``first_index`` in ``group`` (names and posters use it); cross-posts go to one of ``others``."""
    releases: list[PlannedRelease] = []
    for k in range(count):
        n = first_index + k
        scheme, crossed = next(draws)
        kind = rng.choice(_OBFUSCATED_KINDS if scheme in OBFUSCATED else _NAMED_KINDS)
        team = rng.choice(_GROUPS_TAGS)
        parts = rng.randint(3, max_parts)
        base, files, styles = _content(rng, kind, n, team, parts, par2cmdline=True)
        request, tag, real = None, "", ""
        # (subject name, real name, yEnc name) of each file
        names = [(name, "", "") for name, _ in files]
        if scheme == "named":
            style = rng.choice(styles or ("name_counter", "counter", "quoted", "request", "file_of"))
            request = str(100_000 + n) if style == "request" else None
            collection = base
        elif scheme == "noisy":
            style = rng.choice(_NOISY_STYLES)
            tag = "".join(rng.choices(_LETTERS, k=6)) if style != "noisy_tagged" else rng.choice(_NOISY_TAGS)
            collection = base
        else:
            if not any(name.endswith(".par2") for name, _ in files):  # a single video: its PAR2 set
                files += [(f"{base}.par2", 1), (volume_names(base, [(0, 1)])[0], max(1, parts // 8))]
            real = base
            if scheme == "par2_obfuscated":
                collection = f"{rng.getrandbits(96):024x}"
                names = [(collection + name[len(base) :], name, "") for name, _ in files]
                style = rng.choice(("counter", "quoted"))
            elif scheme == "per_file_random":
                collection = ""
                names = [(f"{rng.getrandbits(128):032x}", name, name) for name, _ in files]
                style = "counter"
            else:
                collection = ""
                names = [("", name, _random_name(rng, 20)) for name, _ in files]
                style = "random_articles"
        cross = [g for g in others if g != group]
        groups = (group, rng.choice(cross)) if crossed and cross else (group,)
        planned = tuple(
            PlannedFile(
                shown, index, total, rng.choice((384_000, 640_000, 768_000, 716_800)), real_name, yenc_name
            )
            for index, ((_, total), (shown, real_name, yenc_name)) in enumerate(
                zip(files, names, strict=True), 1
            )
        )
        poster = f"{n}-{rng.choice(_POSTERS)}" if rng.random() < 0.3 else rng.choice(_POSTERS)
        releases.append(
            PlannedRelease(
                collection=collection,
                poster=poster,
                style=style,
                files=planned,
                groups=groups,
                kind=kind,
                request_id=request,
                scheme=scheme,
                real_name=real,
                tag=tag,
            )
        )
    return releases


def post_today(
    releases: list[PlannedRelease],
    rng: random.Random,
    *,
    first: int,
    start_time: int,
    base: int = 0,
    missing_parts: list[int] | None = None,
    concurrent: int = 4,
    shuffle: float = 0.05,
    duplicate: float = 0.01,
    missing: float = 0.01,
    cancelled: float = 0.005,
) -> Iterator[Article]:
    """The articles a group receives while ``concurrent`` posters post the plan, as ``post()`` does, but
    each poster one release at a time, and a ``random_articles`` release every article under a random
    subject. Articles carry ``base`` + their release's index in the plan and no message-id (the
    server names them); numbers skipped are cancelled articles. ``missing_parts`` gets, per release,
    how many of its parts were never posted."""
    streams: list[list[tuple[int, int, int]]] = []
    for r, release in enumerate(releases):
        stream = [(r, i, p) for i, f in enumerate(release.files) for p in range(1, f.parts_total + 1)]
        for k in range(len(stream) - 1):
            if rng.random() < shuffle:
                stream[k], stream[k + 1] = stream[k + 1], stream[k]
        kept = [item for item in stream if rng.random() >= missing]
        if missing_parts is not None:
            missing_parts.append(len(stream) - len(kept))
        kept += [item for item in kept if rng.random() < duplicate]  # reposted parts, at the end
        kept.reverse()  # popped from the end
        streams.append(kept)
    number, now = first, start_time
    active: list[tuple[str, list[tuple[int, int, int]]]] = []
    waiting = [r for r in range(len(releases)) if streams[r]]
    while active or waiting:
        if waiting and len(active) < concurrent:
            busy = {poster for poster, _ in active}
            k = 0
            while k < len(waiting) and len(active) < concurrent:
                poster = releases[waiting[k]].poster
                if poster in busy:
                    k += 1  # that poster's tool is still posting its previous release
                    continue
                busy.add(poster)
                active.append((poster, streams[waiting.pop(k)]))
        entry = rng.choice(active)
        stream = entry[1]
        r, i, p = stream.pop()
        if not stream:
            active.remove(entry)
        while rng.random() < cancelled:
            number += 1
        release = releases[r]
        f = release.files[i]
        now += rng.choice((0, 0, 1, 1, 2))
        size = f.part_size if p < f.parts_total else max(1, f.part_size // 3)
        text = _random_name(rng, 24) if release.style == "random_articles" else subject(release, f, p)
        yield Article(
            number, text, release.poster, now, "", size + rng.randint(0, 400), release.groups, base + r, i, p
        )
        number += 1


# An article as post_groups() places it: the article, its home group's index, and its number in each
# of article.groups (the home group first).
Placed = tuple[Article, int, tuple[int, ...]]


class Today:
    """Groups posted at once, in today's styles: ``groups`` are (name, first article number, at least
    this many articles of its own). Each group's releases come from its own seeded generator, plan by
    plan of ``releases_per_plan``; :meth:`articles` merges the groups' postings by date, as one server
    receives them, and numbers each article in every group it is posted to (a cross-post takes the
    next number in each). ``releases[g]`` and ``missing[g]`` (parts never posted, per release) fill as
    :meth:`articles` is read."""

    def __init__(
        self,
        groups: Sequence[tuple[str, int, int]],
        *,
        seed: int,
        start_time: int,
        releases_per_plan: int = 50,
        max_parts: int = 60,
        missing: float = 0.001,
    ) -> None:
        self.groups = list(groups)
        # A part in a thousand never arrives (a good provider loses fewer; post()'s 1 % leaves four
        # releases in five incomplete, which would hide what the styles do in a figure of them).
        self.missing_share = missing
        self.names = [name for name, _, _ in groups]
        self.seed = seed
        self.start_time = start_time
        self.releases_per_plan = releases_per_plan
        self.max_parts = max_parts
        self.releases: list[list[PlannedRelease]] = [[] for _ in groups]
        self.missing: list[list[int]] = [[] for _ in groups]

    def _own(self, g: int) -> Iterator[Article]:
        name, number, articles = self.groups[g]
        rng = random.Random(f"{self.seed}:{name}")
        draws = deck(rng)
        when, count = self.start_time, 0
        while count < articles:
            base = len(self.releases[g])
            planned = plan_today(
                rng,
                self.releases_per_plan,
                name,
                self.names,
                draws,
                first_index=base,
                max_parts=self.max_parts,
            )
            self.releases[g] += planned
            last: Article | None = None
            for last in post_today(
                planned,
                rng,
                first=number,
                start_time=when,
                base=base,
                missing_parts=self.missing[g],
                missing=self.missing_share,
            ):
                count += 1
                yield last
            if last is not None:
                number, when = last.number + 1, last.date + 60

    def articles(self) -> Iterator[Placed]:
        index = {name: g for g, name in enumerate(self.names)}
        counter = [first - 1 for _, first, _ in self.groups]  # the last number given in each group
        own = list(counter)  # the last own number of each group's posting (its gaps are kept)
        for article in heapq.merge(*(self._own(g) for g in range(len(self.groups))), key=_posted_at):
            home = index[article.groups[0]]
            counter[home] += article.number - own[home] - 1
            own[home] = article.number
            if len(article.groups) == 1:
                counter[home] += 1
                yield article, home, (counter[home],)
                continue
            numbers = []
            for group in article.groups:
                g = index[group]
                counter[g] += 1
                numbers.append(counter[g])
            yield article, home, tuple(numbers)


def _posted_at(article: Article) -> int:
    return article.date


@dataclass(frozen=True, slots=True)
class TrueFile:
    """A file of a posted release as it really is."""

    name: str  # its real name (what the PAR2 index names)
    size: int  # its bytes, as its parts decode
    parts: int
    subject_name: str  # the name its subjects quote ("" for none)
    yenc_name: str  # the name in its yEnc headers


@dataclass(frozen=True, slots=True)
class TrueRelease:
    """A release as the sample posted it, for tests and benchmarks to check the catalog against."""

    id: str  # "<group index>:<release index>", unique in a sample
    style: str  # one of STYLES
    name: str  # its real name
    files: tuple[TrueFile, ...]
    groups: tuple[str, ...]  # the group it was posted to first, then the one it was cross-posted to
    poster: str
    kind: str  # movie, tv, music, book, pc, single
    complete: bool  # every part posted at least once


def _unhidden(hex_name: str) -> str:
    """The real name ``plan()`` gives an obfuscated set, derived from its hex name so that the plan's
    random sequence stayed the same when real names were added."""
    h = int(hex_name, 16)
    title = _TITLES[h % len(_TITLES)]
    year = 2000 + (h >> 8) % 25
    resolution = ("720p", "1080p", "2160p")[(h >> 16) % 3]
    return f"{title}.{year}.{resolution}.BluRay.x264-{_GROUPS_TAGS[(h >> 24) % len(_GROUPS_TAGS)]}"


def unobfuscated(release: PlannedRelease) -> str:
    """The name a release had before its poster hid it (what its PAR2 index names)."""
    return release.real


def unobfuscated_file(release: PlannedRelease, f: PlannedFile) -> str:
    """A file's name before obfuscation (see :func:`unobfuscated`)."""
    return f.real


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
    "DECK",
    "OBFUSCATED",
    "STYLES",
    "Article",
    "Placed",
    "PlannedFile",
    "PlannedRelease",
    "Posting",
    "Today",
    "TrueFile",
    "TrueRelease",
    "chunk_text",
    "chunks",
    "deck",
    "overview_line",
    "plan",
    "plan_today",
    "post",
    "post_today",
    "subject",
    "unobfuscated",
    "unobfuscated_file",
]
