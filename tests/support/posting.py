"""Real releases, posted to INN2 in each of today's posting styles (issue 16), for end-to-end tests.

``make_files`` writes files of random bytes and a PAR2 set for them with par2cmdline (``par2 create``: an
index file and recovery volumes, as posters make them). ``disguise`` gives the release the names and
subject format of a style, the same ones the sample news server uses (``indexing/sample.py``: named,
noisy, par2_obfuscated, per_file_random, fully_random). ``articles`` yEnc-encodes every file in parts of
equal size (the last one shorter) under the yEnc name its style calls for, with random message-ids;
``post`` posts releases to INN2 as posters at work do, interleaved (a release of two groups is
cross-posted: one article, Newsgroups naming both).

What a test then knows of each release (``Posted``): its real name and files (and their bytes, to
compare with what a downloader assembles), the subjects and message-ids of every article.
"""

from __future__ import annotations

import itertools
import random
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from tests.support.inn2 import Article, post_articles
from usenet_indexer.indexing import sample
from usenet_indexer.nntp import yenc

__all__ = [
    "NOISY_FORMS",
    "Posted",
    "RealFile",
    "articles",
    "disguise",
    "interleave",
    "make_files",
    "make_release",
    "post",
]


@dataclass(frozen=True, slots=True)
class RealFile:
    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class Posted:
    """A release as posted: what it really is, how it was disguised, and its articles in posting order."""

    name: str  # the real release name
    style: str  # one of sample.STYLES
    files: tuple[RealFile, ...]  # real names and bytes, PAR2 files included
    release: sample.PlannedRelease  # the names and subject format of its style
    articles: tuple[Article, ...]
    # file index (in ``files``) and part of each article, in the order of ``articles``
    parts: tuple[tuple[int, int], ...]


def make_files(
    folder: Path, name: str, rng: random.Random, *, volumes: int = 3, size: int = 150_000
) -> list[RealFile]:
    """``name.part01.rar`` … ``name.partNN.rar`` of random bytes (the last one shorter), and the PAR2 set
    par2cmdline makes for them (``name.par2`` and its recovery volumes), read back from ``folder``."""
    tool = shutil.which("par2")
    if tool is None:
        raise RuntimeError(
            "par2cmdline is missing: scripts/setup-system.sh installs it (apt-get install par2)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    payload = []
    for i in range(1, volumes + 1):
        data = rng.randbytes(size if i < volumes else size // 3)
        (folder / f"{name}.part{i:02d}.rar").write_bytes(data)
        payload.append(f"{name}.part{i:02d}.rar")
    subprocess.run(
        [tool, "create", "-q", "-q", "-r10", "-n2", "-s16384", f"{name}.par2", "--", *payload],
        cwd=folder,
        check=True,
        capture_output=True,
        timeout=120,
    )
    made = sorted(p.name for p in folder.iterdir() if p.name.startswith(name) and p.name.endswith(".par2"))
    return [RealFile(n, (folder / n).read_bytes()) for n in payload + made]


NOISY_FORMS = ("noisy_private", "noisy_tagged", "noisy_site")  # sample.py's noisy subject styles


def disguise(
    files: list[RealFile],
    name: str,
    style: str,
    rng: random.Random,
    *,
    poster: str,
    groups: tuple[str, ...],
    noise: str = "noisy_private",
    tag: str = "",
) -> sample.PlannedRelease:
    """The release as a poster of ``style`` names it (see indexing/sample.py's docstring); ``noise``:
    which noisy wrapper a ``noisy`` release's subjects carry (one of NOISY_FORMS), ``tag`` the tag in
    it (drawn as sample.py draws it when not given)."""
    collection, subject_style = name, "name_counter"
    names = [(f.name, "", "") for f in files]  # (name in the subjects, real name, yEnc name)
    if style == "noisy":
        if noise not in NOISY_FORMS:
            raise ValueError(f"unknown noisy form {noise!r}: one of {', '.join(NOISY_FORMS)}")
        subject_style = noise
        if not tag and noise == "noisy_tagged":  # a word, as sample.py's tags: [HD], [ReUp]
            tag = rng.choice(("TOWN", "NEW", "ReUp", "HD", "BiRD"))
        elif not tag:  # a random tag: [PRiVATE]-[WtFnZb]-…, >www.wtfnzb.invalid<
            tag = "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", k=6))
    elif style == "par2_obfuscated":
        collection, subject_style = f"{rng.getrandbits(96):024x}", "counter"
        names = [(collection + f.name[len(name) :], f.name, "") for f in files]
    elif style == "per_file_random":
        collection, subject_style = "", "counter"
        names = [(f"{rng.getrandbits(128):032x}", f.name, f.name) for f in files]
    elif style == "fully_random":
        collection, subject_style = "", "random_articles"
        names = [("", f.name, f"{rng.getrandbits(80):020x}") for f in files]
    elif style != "named":
        raise ValueError(f"unknown style {style!r}: one of {', '.join(sample.STYLES)}")
    return sample.PlannedRelease(
        collection=collection,
        poster=poster,
        style=subject_style,
        files=tuple(
            sample.PlannedFile(shown, index, 0, 0, real, yenc_name)
            for index, (shown, real, yenc_name) in enumerate(names, start=1)
        ),
        groups=groups,
        kind="movie",
        scheme=style,
        real_name=name if style in sample.OBFUSCATED else "",
        tag=tag,
    )


def yenc_parts(data: bytes, yenc_name: str, part_size: int) -> Iterator[tuple[int, int, bytes]]:
    """(part, total, body) of ``data`` yEnc-encoded in parts of ``part_size`` bytes, the last shorter."""
    total = max(1, -(-len(data) // part_size))
    for part in range(1, total + 1):
        begin = (part - 1) * part_size
        body = yenc.encode(
            data[begin : begin + part_size],
            yenc_name,
            part=part,
            total=total,
            begin=begin + 1,
            file_size=len(data),
        )
        yield part, total, body


def articles(
    files: list[RealFile],
    release: sample.PlannedRelease,
    rng: random.Random,
    *,
    part_size: int = 40_000,
    when: datetime | None = None,
) -> tuple[list[Article], list[tuple[int, int]]]:
    """Every file yEnc-encoded in parts of ``part_size`` bytes (the last shorter), under its style's
    subjects and yEnc names, with random message-ids; and (file index, part) of each article."""
    out: list[Article] = []
    parts: list[tuple[int, int]] = []
    start = when or datetime.now(UTC)
    for index, (f, planned) in enumerate(zip(files, release.files, strict=True)):
        total = max(1, -(-len(f.data) // part_size))
        sized = sample.PlannedFile(
            planned.name, planned.index, total, part_size, planned.real_name, planned.yenc_name
        )
        for part, _, body in yenc_parts(f.data, sized.yenc, part_size):
            if release.style == "random_articles":
                subject = uuid.UUID(int=rng.getrandbits(128)).hex[:24]
            else:
                subject = sample.subject(release, sized, part)
            out.append(
                Article(
                    message_id=f"<{uuid.uuid4().hex}@usenet-indexer.test>",  # unique: INN2 keeps a history
                    subject=subject,
                    poster=release.poster,
                    body=body,
                    date=format_datetime(start + timedelta(seconds=len(out)), usegmt=True),
                )
            )
            parts.append((index, part))
    return out, parts


def make_release(
    folder: Path,
    name: str,
    style: str,
    rng: random.Random,
    *,
    poster: str,
    groups: tuple[str, ...],
    volumes: int = 3,
    part_size: int = 40_000,
    when: datetime | None = None,
    noise: str = "noisy_private",
    tag: str = "",
) -> Posted:
    """Make a release's files and its articles in ``style`` (not posted yet: ``inn2.post_articles``
    with ``",".join(posted.release.groups)`` posts them, or interleaved with others); ``when``: the
    first article's date (now by default), a second later each; ``noise`` and ``tag``: see ``disguise``."""
    files = make_files(folder / name, name, rng, volumes=volumes)
    release = disguise(files, name, style, rng, poster=poster, groups=groups, noise=noise, tag=tag)
    made, parts = articles(files, release, rng, part_size=part_size, when=when)
    return Posted(name, style, tuple(files), release, tuple(made), tuple(parts))


def interleave(releases: Sequence[Posted], rng: random.Random) -> list[tuple[str, Article]]:
    """(Newsgroups, article) in the order a server receives them when the releases' posters post at
    once: each poster's releases one after the other, each release's articles in order, the posters'
    streams mixed at random."""
    queues: dict[str, list[tuple[str, Article]]] = {}
    for posted in releases:
        groups = ",".join(posted.release.groups)
        queues.setdefault(posted.release.poster, []).extend((groups, a) for a in posted.articles)
    streams = [list(reversed(queue)) for queue in queues.values()]
    out: list[tuple[str, Article]] = []
    while streams:
        stream = rng.choice(streams)
        out.append(stream.pop())
        if not stream:
            streams.remove(stream)
    return out


def post(releases: Sequence[Posted], rng: random.Random) -> int:
    """Post the releases to INN2, interleaved (:func:`interleave`); returns the articles innd took."""
    taken = 0
    for groups, run in itertools.groupby(interleave(releases, rng), key=lambda item: item[0]):
        taken += post_articles(groups, [article for _, article in run])
    return taken
