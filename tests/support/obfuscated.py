"""Postings in the per-file random style (issue 16): every file of a release under a random name of its
own, ``[k/N] - "fe4cf18d…" yEnc (p/P)``. Several posters post at once, each its releases one after the
other (a pause between two, sometimes none), other posters' named releases among them. Pure and seeded:
the plan is what the catalog must end with."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from usenet_indexer.indexing.sample import Article, Posting

POSTERS = ("Poster A <a@example.com>", "uploader@news.example (Uploader)", "bot-77@example.net")


@dataclass(frozen=True, slots=True)
class RandomFile:
    name: str  # random, as posted
    index: int
    parts: int


@dataclass(frozen=True, slots=True)
class RandomRelease:
    poster: str
    files: tuple[RandomFile, ...]
    pause: int  # seconds the poster waits after it
    named: bool = False  # a release named in its subjects (noise around the random ones)


@dataclass(slots=True)
class RandomPosting:
    releases: list[RandomRelease]
    posting: Posting
    # message-ids of each release, by its index in ``releases``
    message_ids: dict[int, set[str]] = field(default_factory=dict)

    def expected(self) -> list[frozenset[str]]:
        """The releases the catalog must end with, as sets of message-ids."""
        return sorted((frozenset(ids) for ids in self.message_ids.values()), key=sorted)


def plan_random(
    rng: random.Random,
    releases: int,
    *,
    posters: tuple[str, ...] = POSTERS,
    max_files: int = 7,
    max_parts: int = 6,
) -> list[RandomRelease]:
    out = []
    for _ in range(releases):
        n = rng.randint(2, max_files)
        files = tuple(
            RandomFile(f"{rng.getrandbits(128):032x}", k, rng.randint(1, max_parts)) for k in range(1, n + 1)
        )
        if rng.random() < 0.2:  # an NFO numbered [0/N], posted first
            files = (RandomFile(f"{rng.getrandbits(128):032x}", 0, 1), *files)
        pause = rng.choice((0, 0, 30, 120, 900, 3600))
        out.append(RandomRelease(rng.choice(posters), files, pause, named=rng.random() < 0.2))
    return out


def subject(release: RandomRelease, f: RandomFile, part: int, number: int) -> str:
    n = sum(1 for f in release.files if f.index)
    if release.named:
        name = f"Named.Release.{number}"
        return f'{name} - [{f.index}/{n}] - "{name}.part{f.index}.rar" yEnc ({part}/{f.parts})'
    return f'[{f.index}/{n}] - "{f.name}" yEnc ({part}/{f.parts})'


def post_random(
    releases: list[RandomRelease],
    rng: random.Random,
    *,
    group: str,
    first: int = 1_000,
    start_time: int = 1_700_000_000,
    shuffle: float = 0.1,
    lost_files: float = 0.0,
    lost_parts: float = 0.0,
) -> RandomPosting:
    """Each poster posts its releases in plan order, one after the other; the posters at once.
    ``lost_files``, ``lost_parts``: shares of files and of parts that never reach the server."""
    queues: dict[str, list[int]] = {}
    for r, release in enumerate(releases):
        queues.setdefault(release.poster, []).append(r)
    streams: dict[str, list[tuple[int, int, int]]] = {}
    ready: dict[str, int] = dict.fromkeys(queues, start_time)
    result = RandomPosting(releases, Posting(first=first))
    number = first
    now = start_time
    while queues or streams:
        for poster in list(queues):
            if poster not in streams and ready[poster] <= now:
                r = queues[poster].pop(0)
                if not queues[poster]:
                    del queues[poster]
                kept = [i for i in range(len(releases[r].files)) if rng.random() >= lost_files] or [0]
                stream = [
                    (r, i, p)
                    for i in kept
                    for p in range(1, releases[r].files[i].parts + 1)
                    if p == 1 or rng.random() >= lost_parts
                ]
                for k in range(len(stream) - 1):  # several connections: neighbours swap places
                    if rng.random() < shuffle:
                        stream[k], stream[k + 1] = stream[k + 1], stream[k]
                streams[poster] = list(reversed(stream))
        if not streams:
            now = min(ready[p] for p in queues)
            continue
        poster = rng.choice(sorted(streams))
        r, i, p = streams[poster].pop()
        release = releases[r]
        if not streams[poster]:
            del streams[poster]
            ready[poster] = now + release.pause
        f = release.files[i]
        now += rng.choice((0, 1, 1, 2))
        mid = f"p{p}.{rng.getrandbits(64):016x}@{r}.post.local"
        result.message_ids.setdefault(r, set()).add(mid)
        result.posting.articles.append(
            Article(
                number=number,
                subject=subject(release, f, p, r),
                poster=release.poster,
                date=now,
                message_id=mid,
                size=700_000 if p < f.parts else 300_000,
                groups=(group,),
                release=r,
                file=i,
                part=p,
            )
        )
        number += 1 + (rng.random() < 0.01)  # now and then an article the server no longer has
    result.posting.last = number - 1
    return result
