"""Loose articles: binary-sized posts that no subject rule reads, folded into runs (issue 16). Pure.

Posting tools that obfuscate fully give every article a random subject of its own, with no ``[k/N]``
and no ``yEnc (p/P)`` counter: no rule reads them, and before this the indexer counted them as
``unmatched`` and dropped them. What still ties them together is the poster, the posting burst and
the bodies (catalog/grouping.py, indexing/bursts.py, catalog/probe.py). The indexer keeps them as
*runs*, and only those of at least ``LOOSE_MIN_BYTES``:

- ``LOOSE_MIN_BYTES`` = 1,024. A yEnc article is its headers (~0.5-1 KB) and a body; the smallest
  that matters, a PAR2 index of a few files, is over 1.5 KB. A text post is often as large, so the
  bar is low on purpose: what is not a release is dropped by the grouping loop, which joins a burst
  only when it has ``MIN_ARTICLES`` articles and one of ``BINARY_BYTES`` (a yEnc part is 250-750 KB;
  a text post of 32 KB is rare). Runs wait in their own table (``loose_runs``), never in the catalog
  that searches read, so spam and text never show as releases.
- A run is the loose articles of one poster within one block of ``RUN_ARTICLES`` article numbers of
  the indexing group: its key (``run_key``) is made from poster, group and block, so the same
  articles give the same runs whatever the batch and range cuts (a batch cut inside a block gives
  two fragments of one key, which merge). A batch then holds a fragment per poster and block, not
  one per article.
- Each article is a file of one part named by its message-id (``article_file``): unique, the same in
  every group it is cross-posted to, so merging drops a repeat, and the subject it was posted under
  is kept for the NZB.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from usenet_indexer.indexing.fragment import FileFragment, ReleaseFragment, int_array
from usenet_indexer.indexing.naming import normalise_poster

LOOSE_MIN_BYTES = 1_024
BINARY_BYTES = 32 * 1024
MIN_ARTICLES = 2
RUN_ARTICLES = 1_000


@dataclass(frozen=True, slots=True)
class LooseArticle:
    """A well-formed overview line no rule reads, of at least ``LOOSE_MIN_BYTES``."""

    number: int
    size: int
    poster: str
    date: int | None
    message_id: str  # without brackets
    subject: str
    groups: tuple[str, ...]  # sorted, the indexing group among them


def run_key(poster: str, group: str, block: int) -> str:
    """A run's key: poster, indexing group and block of ``RUN_ARTICLES`` numbers. Prefixed so that it
    can never be a subject key (indexer.release_key) nor a joined one (grouping.group_key)."""
    text = "\0".join(("run", normalise_poster(poster), group, str(block)))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def block_of(article: int) -> int:
    return article // RUN_ARTICLES


def article_file(article: int, size: int, message_id: str, subject: str) -> FileFragment:
    """One loose article as a file of one part, named by its message-id."""
    return FileFragment(
        name=message_id,
        index=0,
        parts_total=1,
        parts=int_array([1]),
        sizes=int_array([size]),
        articles=int_array([article]),
        message_ids=message_id.encode(),
        subject=subject,
    )


def is_article_file(f: FileFragment) -> bool:
    """A file ``article_file`` made: one part, named by its own message-id."""
    return f.parts_total == 1 and len(f.parts) == 1 and f.name.encode() == f.message_ids


def fold(group: str, articles: Iterable[LooseArticle]) -> tuple[ReleaseFragment, ...]:
    """The runs of ``articles`` (one batch's): a fragment per poster and block, sorted by key. An
    article posted twice under one message-id keeps its lowest number."""
    by_run: dict[str, list[LooseArticle]] = {}
    for a in articles:
        by_run.setdefault(run_key(a.poster, group, block_of(a.number)), []).append(a)
    out = []
    for key in sorted(by_run):
        members = sorted(by_run[key], key=lambda a: a.number)
        first: dict[str, LooseArticle] = {}
        for a in members:
            first.setdefault(a.message_id, a)
        files = tuple(
            article_file(a.number, a.size, a.message_id, a.subject)
            for a in sorted(first.values(), key=lambda a: a.message_id)
        )
        out.append(
            ReleaseFragment(
                key=key,
                name="",
                poster=min(a.poster for a in members),
                groups=tuple(sorted({g for a in members for g in a.groups})),
                file_total=0,
                first_article=members[0].number,
                first_date=members[0].date,
                last_article=members[-1].number,
                last_date=members[-1].date,
                obfuscated=True,
                request_id=None,
                files=files,
            )
        )
    return tuple(out)


def check_run(run: ReleaseFragment, group: str) -> str | None:
    """Why ``run`` is not a run the indexer of ``group`` could have made, or None (the coordinator's
    check, wire/batch.py: a node writes only runs of its own articles, under the key they make)."""
    block = block_of(run.first_article)
    if run.key != run_key(run.poster, group, block):
        return f"key {run.key[:64]!r} is not the key of its poster, group and block ({block})"
    if block_of(run.last_article) != block:
        return f"articles {run.first_article}-{run.last_article} span more than one block"
    if not run.files:
        return "a run without articles"
    for position, f in enumerate(run.files):
        if not is_article_file(f):
            return f"files[{position}] is not one article named by its message-id"
        if not run.first_article <= f.articles[0] <= run.last_article:
            return f"files[{position}]: article {f.articles[0]} is outside the run's articles"
    if run.file_total != 0 or run.request_id is not None:
        return "a run has no file total and no request id"
    return None


def worth_joining(articles: int, largest: int) -> bool:
    """Whether a burst of ``articles`` loose articles, the largest of ``largest`` bytes, may be a
    release (else it is text or spam)."""
    return articles >= MIN_ARTICLES and largest >= BINARY_BYTES


__all__ = [
    "BINARY_BYTES",
    "LOOSE_MIN_BYTES",
    "MIN_ARTICLES",
    "RUN_ARTICLES",
    "LooseArticle",
    "article_file",
    "block_of",
    "check_run",
    "fold",
    "is_article_file",
    "run_key",
    "worth_joining",
]
