"""The sample news server's feed without a server (issue 16): every posted release's bodies decode with
the yEnc names its style calls for, its PAR2 index names its real files at their real sizes, cross-posts
are the same lines in two groups, and ``truth()`` says what was posted."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from usenet_indexer.indexing import sample
from usenet_indexer.indexing.naming import FileKind, file_kind
from usenet_indexer.indexing.par2 import read_par2
from usenet_indexer.newsservers.sample_server import SampleFeed, sample_groups
from usenet_indexer.nntp.yenc import decode

BLOCK = 2_000
# release id -> file index -> part -> message-id (the first posted)
Posted = dict[str, dict[int, dict[int, str]]]


@pytest.fixture(scope="module")
def feed() -> SampleFeed:
    return SampleFeed(sample_groups(0.03), block_articles=BLOCK)


@pytest.fixture(scope="module")
def posted(feed: SampleFeed) -> Posted:
    out: Posted = {}
    for name in feed.groups:
        low, high = feed.watermarks(name)
        for line in feed.overview(name, low, high).split(b"\r\n")[:-1]:
            message_id = line.split(b"\t")[4].decode()
            found = feed.carried(message_id)
            assert found is not None
            out.setdefault(found[0], {}).setdefault(found[2], {}).setdefault(found[3], message_id)
    return out


def test_truth_lists_every_release_with_its_style_name_and_groups(feed: SampleFeed, posted: Posted) -> None:
    truth = feed.truth()
    assert {t.id for t in truth} == set(posted)  # every release posted (some of its parts at least)
    styles = Counter(t.style for t in truth)
    assert set(styles) == set(sample.STYLES)
    for style, share in sample.STYLES.items():
        assert abs(styles[style] / len(truth) - share / sample.DECK) < 0.04
    for t in truth:
        g, r = (int(x) for x in t.id.split(":"))
        release = feed.releases(feed.groups[g])[r]
        assert t.groups[0] == feed.groups[g] and set(t.groups) <= set(feed.groups)
        assert t.name == release.real and t.name and not t.name.isspace()
        assert [f.name for f in t.files] == [f.real for f in release.files]
        parts = sum(len(p) for p in posted.get(t.id, {}).values())
        assert t.complete == (parts == sum(f.parts_total for f in release.files))
    assert sum(t.complete for t in truth) > 0.8 * len(truth)
    assert sum(len(t.groups) == 2 for t in truth) > 0.1 * len(truth)


def test_first_bodies_carry_the_yenc_name_of_their_style(feed: SampleFeed, posted: Posted) -> None:
    truth = {t.id: t for t in feed.truth()}
    checked: Counter[str] = Counter()
    for rid, files in posted.items():
        t = truth[rid]
        for index, parts in files.items():
            if 1 not in parts:
                continue
            article = feed.article(parts[1], head=False)
            assert article is not None
            decoded = decode(article.body)  # CRC checked
            real = t.files[index]
            assert (decoded.part, decoded.total, decoded.begin, decoded.size) == (1, real.parts, 1, real.size)
            # per_file_random: the real name, only here and in the PAR2; fully_random: a random one.
            if t.style == "per_file_random":
                assert decoded.name == real.name != real.subject_name
            elif t.style == "fully_random":
                assert decoded.name == real.yenc_name != real.name and real.subject_name == ""
            else:
                assert decoded.name == real.subject_name
            checked[t.style] += 1
    assert set(checked) == set(sample.STYLES)


def test_each_release_has_a_par2_index_naming_its_real_files(feed: SampleFeed, posted: Posted) -> None:
    truth = {t.id: t for t in feed.truth()}
    named = 0
    for rid, files in posted.items():
        t = truth[rid]
        payload = {
            f.name: f.size for f in t.files if file_kind(f.name) not in (FileKind.PAR2, FileKind.PAR2_VOLUME)
        }
        index = next((i for i, f in enumerate(t.files) if file_kind(f.name) is FileKind.PAR2), None)
        if index is None:
            assert t.style in ("named", "noisy") and t.kind in ("book", "single")  # posted without one
            continue
        if 1 not in files.get(index, {}):
            continue  # the index file's one part was not posted
        article = feed.article(files[index][1], head=False)
        assert article is not None
        data = decode(article.body).data
        assert len(data) == t.files[index].size
        par2 = read_par2(data)
        assert {f.name: f.size for f in par2.files} == payload
        named += 1
    assert named > 0.8 * len(posted)


@pytest.mark.slow
def test_a_cross_post_is_the_same_line_in_both_groups(feed: SampleFeed) -> None:
    lines: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for name in feed.groups:
        low, high = feed.watermarks(name)
        for line in feed.overview(name, low, high).decode().split("\r\n")[:-1]:
            fields = line.split("\t")
            lines[fields[4]][name] = fields
    crossed = [groups for groups in lines.values() if len(groups) > 1]
    assert len(crossed) > 0.05 * len(lines)
    for groups in crossed:
        assert len(groups) == 2
        (a, first), (b, second) = groups.items()
        assert first[1:] == second[1:]  # all but the article number
        xref = first[8].split()[2:]
        assert xref == [f"{a}:{first[0]}", f"{b}:{second[0]}"] or xref == [
            f"{b}:{second[0]}",
            f"{a}:{first[0]}",
        ]
        # By number in the other group too: the same message-id, the same body.
        for name, fields in groups.items():
            assert feed.message_id(name, int(fields[0])) == fields[4]
        assert feed.article(first[4]) is not None


def test_a_cross_post_is_served_as_soon_as_one_of_its_groups_shows_it() -> None:
    # With a live part each group's tail is posted at its own pace: a cross-post may show in its
    # second group before its first group's high watermark reaches it. Its body is there all the same.
    now = [0.0]
    feed = SampleFeed(
        sample_groups(0.03), block_articles=BLOCK, live_fraction=0.3, live_seconds=10.0, clock=lambda: now[0]
    )
    feed.start_live()
    early = 0
    for moment in (2.0, 5.0, 8.0):
        now[0] = moment
        for name in feed.groups:
            _, low, high = feed.group(name)  # type: ignore[misc]
            for line in feed.overview(name, low, high).split(b"\r\n")[:-1]:
                message_id = line.split(b"\t")[4].decode()
                number, index = (int(x) for x in re.findall(r"\.(\d+)\.(\d+)@", message_id)[0])
                first = feed.groups[index]
                if first != name and number > feed.group(first)[2]:  # type: ignore[index]
                    assert feed.article(message_id, head=False) is not None
                    assert feed.message_id(first, number) is None  # by number: not posted there yet
                    early += 1
    assert early > 0
