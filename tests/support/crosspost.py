"""A generated posting cross-posted to two groups (issue 16): the same articles (message-ids, subjects,
posters, dates) under other article numbers in each group, with an Xref naming both, as a news server
writes it. Each group's overview is indexed by a worker of its own."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from usenet_indexer.indexing import Batch, RangeIndexer
from usenet_indexer.indexing.rules import default_rules
from usenet_indexer.indexing.sample import Article, PlannedRelease, chunk_text, plan, post, subject

OFFSET = 70_001  # group B numbers its copy of article n as n + OFFSET


@dataclass(frozen=True, slots=True)
class CrossPost:
    groups: tuple[str, str]
    articles: list[Article]  # as numbered in the first group
    first: int
    last: int
    plan: list[PlannedRelease]

    def first_subjects(self) -> set[str]:
        """The subject each posted file's part 1 was posted under."""
        return {subject(r, f, 1) for r in self.plan for f in r.files}

    def number(self, article: Article, group: str) -> int:
        return article.number + (OFFSET if group == self.groups[1] else 0)

    def line(self, article: Article, group: str) -> bytes:
        a, b = self.groups
        xref = f"Xref: news.example.com {a}:{article.number} {b}:{article.number + OFFSET}"
        return (
            f"{self.number(article, group)}\t{article.subject}\t{article.poster}\t"
            f"Tue, 14 Nov 2023 22:13:{article.date % 60:02d} -0000\t<{article.message_id}>\t\t"
            f"{article.size}\t{article.size // 128}\t{xref}"
        ).encode()

    def span(self, group: str) -> tuple[int, int]:
        shift = OFFSET if group == self.groups[1] else 0
        return self.first + shift, self.last + shift

    def index(self, group: str, batch_articles: int = 10**9) -> list[Batch]:
        """The worker of ``group``: its overview in batches of ``batch_articles`` article numbers."""
        first, last = self.span(group)
        indexer = RangeIndexer(group, first, last, first, default_rules())
        lines = {self.number(a, group): self.line(a, group) for a in self.articles}
        batches = []
        for start in range(first, last + 1, batch_articles):
            end = min(start + batch_articles - 1, last)
            indexer.add_text(chunk_text([lines[n] for n in range(start, end + 1) if n in lines]), end + 1)
            if end == last:
                indexer.finish()
            batches.append(indexer.take())
        return batches


def cross_post(groups: tuple[str, str], releases: int = 12, seed: int = 16) -> CrossPost:
    rng = random.Random(seed)
    planned = [replace(r, groups=groups) for r in plan(rng, releases, groups[0], max_parts=12)]
    posting = post(planned, rng, first=1_000, duplicate=0.0, cancelled=0.0)
    return CrossPost(
        groups=groups, articles=posting.articles, first=posting.first, last=posting.last, plan=planned
    )
