"""Subject rules: the built-in set reads what posters send; bad rules are refused with the reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from usenet_indexer.indexing.naming import FileKind, normalise
from usenet_indexer.indexing.rules import Rule, RuleError, RuleSet, default_rules, test

G = "alt.binaries.test"

CASES = [
    # subject, collection, file, (i, n), (p, t), request, obfuscated, kind
    (
        '"Some.Name.part01.rar" yEnc (12/137)',
        "Some.Name",
        "Some.Name.part01.rar",
        (0, 0),
        (12, 137),
        None,
        False,
        "rar",
    ),
    (
        '[01/15] - "Some.Name.vol03+04.par2" yEnc (1/5)',
        "Some.Name",
        "Some.Name.vol03+04.par2",
        (1, 15),
        (1, 5),
        None,
        False,
        "par2_volume",
    ),
    (
        'Some Name - [02/15] - "Some.Name.r01" yEnc (3/50)',
        "Some Name",
        "Some.Name.r01",
        (2, 15),
        (3, 50),
        None,
        False,
        "rar",
    ),
    (
        'Some Name (03/15) "file.7z.003" yEnc (3/50)',
        "file",  # a set's base ties its files, words before it name nothing (issue 16)
        "file.7z.003",
        (3, 15),
        (3, 50),
        None,
        False,
        "7z",
    ),
    (
        'My Album - File 3 of 12 - "03 - Song.mp3" yEnc (1/10)',
        "My Album",
        "03 - Song.mp3",
        (3, 12),
        (1, 10),
        None,
        False,
        "audio",
    ),
    (
        '[123456]-[FULL]-[#a.b.teevee]-[ Show.S01E01.720p-GRP ]-[01/20] - "show.part01.rar" yEnc (1/50)',
        "Show.S01E01.720p-GRP",
        "show.part01.rar",
        (1, 20),
        (1, 50),
        "123456",
        False,
        "rar",
    ),
    (
        '[01/09] - "a8f3c9d2e1b04f6a9c7d.part02.rar" yEnc (1/80)',
        "a8f3c9d2e1b04f6a9c7d",
        "a8f3c9d2e1b04f6a9c7d.part02.rar",
        (1, 9),
        (1, 80),
        None,
        True,
        "rar",
    ),
    (
        '"Xk9Qz2Lm7Pw4Rt8Yb3Nc.par2" yEnc (1/1)',
        "Xk9Qz2Lm7Pw4Rt8Yb3Nc",
        "Xk9Qz2Lm7Pw4Rt8Yb3Nc.par2",
        (0, 0),
        (1, 1),
        None,
        True,
        "par2",
    ),
    (
        "Movie.2019.1080p.mkv yEnc (5/200)",
        "Movie.2019.1080p",
        "Movie.2019.1080p.mkv",
        (0, 0),
        (5, 200),
        None,
        False,
        "video",
    ),
    ('"Some.Name.nfo" yEnc (1/1)', "Some.Name", "Some.Name.nfo", (0, 0), (1, 1), None, False, "nfo"),
    ('"Some.Name.sfv" yEnc', "Some.Name", "Some.Name.sfv", (0, 0), (1, 1), None, False, "sfv"),
    ('"Some.Name.nzb" yEnc (1/1)', "Some.Name", "Some.Name.nzb", (0, 0), (1, 1), None, False, "nzb"),
    (
        '"Some.Name.part001.rar" yEnc (1/9)',
        "Some.Name",
        "Some.Name.part001.rar",
        (0, 0),
        (1, 9),
        None,
        False,
        "rar",
    ),
    ("Name [1/3] file.bin yEnc (2/3) 12345", "Name", "file.bin", (1, 3), (2, 3), None, False, "disc"),
]


@pytest.mark.parametrize(
    ("subject", "collection", "file", "files", "parts", "request_id", "obfuscated", "kind"), CASES
)
def test_default_rules_read_common_subjects(
    subject: str,
    collection: str,
    file: str,
    files: tuple[int, int],
    parts: tuple[int, int],
    request_id: str | None,
    obfuscated: bool,
    kind: str,
) -> None:
    m = test(subject, G)
    assert m is not None
    assert m.collection == collection
    assert m.file_name == file
    assert (m.file_index, m.file_total) == files
    assert (m.part, m.part_total) == parts
    assert m.request_id == request_id
    assert m.obfuscated is obfuscated
    assert m.kind is FileKind(kind)


def test_members_share_their_base_name() -> None:
    names = [
        "x.part01.rar",
        "x.part12.rar",
        "x.r00",
        "x.rar",
        "x.par2",
        "x.vol00+01.par2",
        "x.vol15+16.par2",
        "x.nfo",
        "x.sfv",
        "x.7z.001",
        "x.nzb",
    ]
    collections = {test(f'"{n}" yEnc (1/2)', G).collection for n in names}  # type: ignore[union-attr]
    assert collections == {"x"}


def test_text_posts_match_nothing() -> None:
    assert test("Re: where are the new posts?", G) is None


def test_invalid_regex_is_refused_with_the_pattern_and_the_error() -> None:
    with pytest.raises(RuleError) as caught:
        Rule("broken", r'^(?P<file>"[^"]+)"(')
    message = str(caught.value)
    assert "broken" in message
    assert r'^(?P<file>"[^"]+)"(' in message
    assert "missing ), unterminated subpattern" in message


def test_invalid_group_regex_is_refused() -> None:
    with pytest.raises(RuleError, match=r"group pattern 'alt\.\[' does not compile"):
        Rule("r", r"(?P<file>.+)", group=r"alt.[")


@pytest.mark.parametrize(
    ("pattern", "match"),
    [
        (r"(?P<size>\d+)(?P<file>.+)", "unknown named groups"),
        (r"(.+)", "names neither"),
        (r"(?P<file>.+) \((?P<p>\d+)/", "without the other"),
    ],
)
def test_rules_that_would_read_nothing_are_refused(pattern: str, match: str) -> None:
    with pytest.raises(RuleError, match=match):
        Rule("r", pattern)


def test_group_scope() -> None:
    rules = RuleSet(
        3,
        (
            Rule(
                "teevee",
                r"^TV: (?P<name>.+?) (?P<file>\S+) \((?P<p>\d+)/(?P<t>\d+)\)$",
                group=r"alt\.binaries\.teevee",
            ),
            *default_rules().rules,
        ),
    )
    subject = "TV: Show S01E01 show.mkv (1/5)"
    assert rules.match(subject, "alt.binaries.teevee").rule == "teevee"  # type: ignore[union-attr]
    assert rules.match(subject, "alt.binaries.teevee").collection == "Show S01E01"  # type: ignore[union-attr]
    assert rules.match(subject, "alt.binaries.teevee.x").rule != "teevee"  # type: ignore[union-attr]


def test_json_round_trip() -> None:
    rules = RuleSet(7, (Rule("a", r"(?P<file>.+)", group="alt\\..*"), Rule("b", r"(?P<name>.+)")))
    again = RuleSet.from_json(rules.to_json())
    assert again == rules
    assert default_rules() == RuleSet.from_json(default_rules().to_json())


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "is JSON"),
        ('{"version": 1}', "exactly"),
        ('{"version": 1, "rules": [{"name": "a"}]}', "rule #1"),
        ('{"version": -1, "rules": []}', "version"),
        ('{"version": 1, "rules": [{"name": "a", "subject": "(?P<file>"}]}', "does not compile"),
        (
            '{"version": 1, "rules": [{"name": "a", "subject": "(?P<file>.)"},'
            ' {"name": "a", "subject": "(?P<file>.)"}]}',
            "twice",
        ),
    ],
)
def test_bad_rule_set_json(text: str, match: str) -> None:
    with pytest.raises(RuleError, match=match):
        RuleSet.from_json(text)


def test_rule_set_json_is_plain() -> None:
    data = json.loads(default_rules().to_json())
    assert data["version"] == 0
    assert [r["name"] for r in data["rules"]][:2] == ["request_tagged", "counter_file"]
    assert {"name": "file_of", "subject": data["rules"][2]["subject"], "requires": "file"} == data["rules"][2]


# ---- noise around the usual form (issue 16) -------------------------------------------------------

NOISY = [
    # subject, file, (i, n), (p, t), the release's name (its collection)
    (
        '[PRiVATE]-[WtFnZb]-[Name]-[1/8] - "Name.part1.rar" yEnc (1/100)',
        "Name.part1.rar",
        (1, 8),
        (1, 100),
        "Name",
    ),
    # WtFnZb with empty quotes: the file name in the last brackets
    (
        '[PRiVATE]-[WtFnZb]-[Name.part2.rar]-[2/8] - "" yEnc (7/100)',
        "Name.part2.rar",
        (2, 8),
        (7, 100),
        "Name",
    ),
    # a per-file prefix: the file's own name before the counter
    ('Name.part3.rar [3/8] - "Name.part3.rar" yEnc (1/100)', "Name.part3.rar", (3, 8), (1, 100), "Name"),
    # Nyuu: "{comment} [{0filenum}/{files}] - "{filename}" yEnc ({part}/{parts}) {filesize}", comment empty
    (' [03/08] - "Name.part3.rar" yEnc (2/100) 104857600', "Name.part3.rar", (3, 8), (2, 100), "Name"),
    # ngPost's default
    ('[1/8] - "Name.part1.rar" yEnc (1/100)', "Name.part1.rar", (1, 8), (1, 100), "Name"),
    # newsmangler: a subject prefix before the counter
    ('Name [5/8] - "Name.part5.rar" yEnc (1/100)', "Name.part5.rar", (5, 8), (1, 100), "Name"),
    # JBinUp: zero-padded counters, a size after the part counter
    (
        'Name - [05/08] - "Name.part5.rar" yEnc (001/100) [95.37 MB]',
        "Name.part5.rar",
        (5, 8),
        (1, 100),
        "Name",
    ),
    # nzb-monkey's password tag, a channel and a site banner in brackets
    (
        '[#a.b.x@EFNet]-[FULL]-Name {{s3cret}} [6/8] - "Name.part6.rar" yEnc (9/100)',
        "Name.part6.rar",
        (6, 8),
        (9, 100),
        "Name",
    ),
    (
        '[12345]-[REPOST] - [7/8] - "Name.vol00+01.par2" yEnc (1/3) (1.2 MB)',
        "Name.vol00+01.par2",
        (7, 8),
        (1, 3),
        "Name",
    ),
    # text after the counter only
    ('"Name.part1.rar" yEnc (1/100) - posted by someone', "Name.part1.rar", (0, 0), (1, 100), "Name"),
    # a hash for a file name: the title names the release (and ties its files together)
    (
        '[PRiVATE] My.Movie.2019 [1/6] - "fe4cf18d550791a496480fbaf1c6aa3b" yEnc (1/12)',
        "fe4cf18d550791a496480fbaf1c6aa3b",
        (1, 6),
        (1, 12),
        "My.Movie.2019",
    ),
    # ... but tags alone do not: the hash stays the name, for a probe to replace
    (
        '[PRiVATE]-[WtFnZb]-[1/6] - "fe4cf18d550791a496480fbaf1c6aa3b.part1.rar" yEnc (1/12)',
        "fe4cf18d550791a496480fbaf1c6aa3b.part1.rar",
        (1, 6),
        (1, 12),
        "fe4cf18d550791a496480fbaf1c6aa3b",
    ),
    # a site's banner before a set: the base names it, not the banner
    (
        '>ghost-of-usenet.org< [4/8] - "Name.part4.rar" yEnc (1/100)',
        "Name.part4.rar",
        (4, 8),
        (1, 100),
        "Name",
    ),
    # a site's banners around a set's title, which spells out the base (the sample's noisy_site)
    (
        '>ghost-of-usenet.org< Harbor.Watch.S01E02.1080p [01/12] - "Harbor.Watch.S01E02.1080p.part01.rar" '
        "yEnc (1/40) >www.abcdef.invalid<",
        "Harbor.Watch.S01E02.1080p.part01.rar",
        (1, 12),
        (1, 40),
        "Harbor.Watch.S01E02.1080p",
    ),
    # WtFnZb's form with a tag of the poster's own
    (
        '[PRiVATE]-[QkWrTz]-[Artist - Album (2001)]-[03/12] - "03 - Song.flac" yEnc (1/4)',
        "03 - Song.flac",
        (3, 12),
        (1, 4),
        "Artist - Album (2001)",
    ),
    # a leading tag before an album's title (the sample's noisy_tagged)
    (
        '[TOWN] Artist - Album (2001) [03/12] - "03 - Song.flac" yEnc (1/4) 4000',
        "03 - Song.flac",
        (3, 12),
        (1, 4),
        "Artist - Album (2001)",
    ),
    (
        '<<www.town.ag>> Artist - Album (2001) [03/12] - "03 - Song.flac" yEnc (1/4)',
        "03 - Song.flac",
        (3, 12),
        (1, 4),
        "Artist - Album (2001)",
    ),
    # an album: a base per track, the title names it (and its par2, whose base the title spells out)
    (
        '[FULL] Artist - Album (2001) [FLAC] [03/12] - "03 - Song.flac" yEnc (1/9)',
        "03 - Song.flac",
        (3, 12),
        (1, 9),
        "Artist - Album (2001) [FLAC]",
    ),
    (
        '[FULL] Artist - Album (2001) [FLAC] [12/12] - "Artist - Album.par2" yEnc (1/1)',
        "Artist - Album.par2",
        (12, 12),
        (1, 1),
        "Artist - Album (2001) [FLAC]",
    ),
]


@pytest.mark.parametrize(("subject", "file", "files", "parts", "collection"), NOISY)
def test_noise_around_the_usual_form(
    subject: str, file: str, files: tuple[int, int], parts: tuple[int, int], collection: str
) -> None:
    m = test(subject, G)
    assert m is not None
    assert m.file_name == file
    assert (m.file_index, m.file_total) == files
    assert (m.part, m.part_total) == parts
    assert normalise(m.collection) == normalise(collection)


def test_the_files_of_a_noisy_posting_are_one_release() -> None:
    """Every file of a set under noise that differs from file to file reads as one release."""
    files = ["Name.part1.rar", "Name.part2.rar", "Name.par2", "Name.vol0+1.par2", "Name.nfo"]
    subjects = [
        f'[PRiVATE]-[WtFnZb]-[{f}]-[{i}/5] - "{f}" yEnc (1/9) {i * 1000}' for i, f in enumerate(files, 1)
    ] + [f'[PRiVATE]-[WtFnZb]-[{f}]-[{i}/5] - "" yEnc (2/9)' for i, f in enumerate(files, 1)]
    readings = [test(s, G) for s in subjects]
    assert all(r is not None for r in readings)
    assert {normalise(r.collection) for r in readings if r} == {"name"}
    assert [r.file_name for r in readings if r] == files + files


_TAGS = st.sampled_from(
    ["[PRiVATE]", "[WtFnZb]", "[FULL]", "[REPOST]", "[re-up]", "[#a.b.teevee@EFNet]", "[#a.b.x]", "[4242]",
     "[]", "{{pw}}", "{{Secret Pass}}", ">ghost-of-usenet.org<", "<<www.town.ag>>", "[ReUp]"]
)  # fmt: skip
_SEPARATORS = st.sampled_from(["", " ", "-", " - ", "|", " | ", "–", ":"])
_WORDS = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .-_()"), max_size=30)
_SUFFIX = st.one_of(
    st.just(""),
    st.integers(0, 10**12).map(lambda n: f" {n}"),
    st.sampled_from([" [95.37 MB]", " (95.37 MB)", " - 1.2 GB", " bytes", " yEnc", " {{pw}}"]),
    _WORDS.map(lambda w: f" {w}" if w.strip() else ""),
)
_FILES = st.sampled_from(
    ["Some.Show.S01E02.720p.WEB.h264-GRP", "Film (2019) 1080p", "a_b-c.d", "Artist - Album (2001) [FLAC]"]
).flatmap(
    lambda base: st.sampled_from(
        [f"{base}.part01.rar", f"{base}.r00", f"{base}.par2", f"{base}.vol03+04.par2", f"{base}.nfo",
         f"{base}.7z.001", f"{base}.mkv"]
    )
)  # fmt: skip


@st.composite
def _noise(draw: st.DrawFn, words: bool) -> str:
    tokens = draw(st.lists(st.one_of(_TAGS, _WORDS) if words else _TAGS, max_size=4))
    seps = draw(st.lists(_SEPARATORS, min_size=len(tokens) + 1, max_size=len(tokens) + 1))
    return "".join(sep + token for sep, token in zip(seps, [*tokens, ""], strict=True))


@settings(max_examples=400, deadline=None)
@given(
    file=_FILES,
    counter=st.tuples(st.integers(1, 99), st.integers(1, 99)),
    part=st.tuples(st.integers(1, 999), st.integers(1, 999)),
    form=st.sampled_from(
        ['[{i}/{n}] - "{f}" yEnc ({p}/{t})', '({i}/{n}) "{f}" yEnc ({p}/{t})', '"{f}" yEnc ({p}/{t})']
    ),
    prefix=_noise(words=False),
    suffix=_SUFFIX,
)  # fmt: skip
@example(  # two banners side by side: the second was read as the release's name (session 8)
    file="Some.Show.S01E02.720p.WEB.h264-GRP.mkv", counter=(1, 2), part=(1, 1),
    form='[{i}/{n}] - "{f}" yEnc ({p}/{t})', prefix=">ghost-of-usenet.org<>ghost-of-usenet.org<", suffix="",
)  # fmt: skip
@example(  # a banner closing where another opens: the whole "<<<" closed the first (session 9)
    file="Some.Show.S01E02.720p.WEB.h264-GRP.mkv", counter=(1, 2), part=(1, 1),
    form='[{i}/{n}] - "{f}" yEnc ({p}/{t})', prefix=">ghost-of-usenet.org<<<www.town.ag>>", suffix="",
)  # fmt: skip
@example(  # the same, mirrored
    file="Some.Show.S01E02.720p.WEB.h264-GRP.mkv", counter=(1, 2), part=(1, 1),
    form='[{i}/{n}] - "{f}" yEnc ({p}/{t})', prefix="<<www.town.ag>>>ghost-of-usenet.org<", suffix="",
)  # fmt: skip
def test_tags_around_a_standard_subject_change_nothing(
    file: str, counter: tuple[int, int], part: tuple[int, int], form: str, prefix: str, suffix: str
) -> None:
    """Tags, dashes and brackets before the usual form, and any text after its part counter: the same
    file, counters and release as the bare subject."""
    (i, n), (p, t) = counter, part
    bare = form.format(i=i, n=n, f=file, p=p, t=t)
    plain, noisy = test(bare, G), test(prefix + bare + suffix, G)
    assert plain is not None
    assert noisy is not None
    assert noisy.file_name == plain.file_name == file
    assert (noisy.file_index, noisy.file_total, noisy.part, noisy.part_total) == (
        plain.file_index,
        plain.file_total,
        p,
        t,
    )
    assert normalise(noisy.collection) == normalise(plain.collection)


@pytest.mark.fuzz
@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(["Some.Show.S01E02.720p.WEB.h264-GRP", "Film (2019) 1080p", "Name"]),
    title=_noise(words=True),
    noise=st.lists(st.tuples(_noise(words=False), _SUFFIX), min_size=6, max_size=6),
)
def test_words_and_tags_never_split_a_set(base: str, title: str, noise: list[tuple[str, str]]) -> None:
    """A title (words the poster chose, the same on every file) and tags that differ from file to file:
    the files of one set stay one release, each its own file, however the title reads; and unless the
    words spell out the set's base name, the release of the bare subjects (the base)."""
    files = [f"{base}.part1.rar", f"{base}.part2.rar", f"{base}.r00", f"{base}.par2", f"{base}.vol0+1.par2",
             f"{base}.nfo"]  # fmt: skip
    readings = []
    for k, (f, (tags, suffix)) in enumerate(zip(files, noise, strict=True), start=1):
        m = test(f'{tags}{title} [{k}/6] - "{f}" yEnc (1/5){suffix}', G)
        assert m is not None
        assert (m.file_name, m.file_index, m.file_total) == (f, k, 6)
        readings.append(normalise(m.collection))
    assert len(set(readings)) == 1
    if normalise(base) not in normalise(title):
        assert readings[0] == normalise(base)


@pytest.mark.parametrize(
    "title",
    ["[" + " " * 4000 + "x", "[" * 4000, "[1" * 2000, "{{" * 2000, "[ / " * 1000 + "x", "[x] " * 1000],
)
def test_titles_a_poster_writes_cost_little(title: str) -> None:
    """A subject is the poster's to write: reading the title around a file name stays fast on the worst
    text (the tags' regex took 2.4 s on "[" and 2,000 blanks, and grew with their cube)."""
    import time

    subject = f'{title} [1/2] - "0123456789abcdef0123456789abcdef.rar" yEnc (1/2)'
    started = time.process_time()
    m = test(subject, G)
    assert time.process_time() - started < 2.0
    assert m is not None
    assert m.file_name == "0123456789abcdef0123456789abcdef.rar"
