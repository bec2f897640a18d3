"""Subject rules: the built-in set reads what posters send; bad rules are refused with the reason."""

from __future__ import annotations

import json

import pytest

from usenet_indexer.indexing.naming import FileKind
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
        "Some Name",
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
