"""The C reader of a subject (``_speedups.subject_reading``) reads what rules._reading reads.

The Python stays the reference: for every subject a rule's regex matches, the C gives the same
SubjectMatch (the same values of the same types), or None where the Python gives None, or False, which
hands the subject to the Python. It must hand over everything that is not printable ASCII, and must not
hand over the printable-ASCII subjects the built-in rules read (else the fast path is never taken).
The C code has twins of some of naming.py's regexes, written for their patterns as they are: the last
tests pin those patterns, so that a change to one fails here and says which C function to change.
"""

from __future__ import annotations

import json
import random
import re
import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from usenet_indexer import accelerator
from usenet_indexer.indexing import naming, rules, sample
from usenet_indexer.indexing.rules import Rule, RuleSet, SubjectMatch, default_rules

from .conftest import NATIVE, needs_native

pytestmark = needs_native
G = "alt.binaries.test"

# Rules of a user's kind beside the built-in ones: a (?P<name>) and a (?P<request>) group, counters
# that are not plain digits, a part without its total.
EXTRA = (
    Rule("named", r"^(?P<name>[^|]*)\|(?P<file>[^|]*)\|(?P<i>\w*)/(?P<n>\w*)"),
    Rule("requested", r"^(?P<request>\S+) (?P<name>.*?) \((?P<p>[\d_+ -]+)/(?P<t>\d*)\)?"),
    Rule("part_only", r"^(?P<file>\S+)(?: \((?P<p>\d+)(?:/(?P<t>\d+))?\))?"),
    Rule("title_only", r"^(?P<title>[^\"]*)\"(?P<file>[^\"]*)\""),
)
RULES = (*default_rules().rules, *EXTRA)

# Pieces subjects are made of: counters, quotes, tags, separators, member names, hashes, banners.
PIECES = [
    " ", "  ", " - ", "-", "–", ":", "|", "_", "'", '"', '""', "[", "]", "(", ")", "{{pw}}", "/", ".", "#",
    "@", "yEnc", "YENC", " yEnc ", "File ", "file", " of ", "1", "01", "007", "12", "123456",
    "9" * 19, "[1/5]", "(1/5)", "[03/12]", "(12/137)", "[100123]", "[FULL]", "[ full ]", "[REPOST]",
    "[re-up]", "[reup]", "[#a.b.teevee]", "[#A.B.x]", "[x@EFNet]", "[#a@b]", "[ 1234 ]", "[PRiVATE]",
    "[WtFnZb]", ">ghost-of-usenet.org<", "<<www.town.ag>>", ">a<>b<", "Some.Name", "The Big Show",
    "Artist - Album (2019) [FLAC]", "S01E02", ".part01.rar", ".part1.RAR", ".rar", ".r00", ".s12", ".z01",
    ".Z001", ".vol03+04.par2", ".VOL0-1.PAR2", ".par2", ".7z.001", ".7Z.002", ".001", ".nfo", ".sfv",
    ".mkv", ".flac", ".epub", ".iso", ".exe", ".txt", ".srr", ".foo", "fe4cf18d2b9a3c7e01d4",
    "259bebd2fa5880587061ce69", "XkQzLmPwRtYbNcVd", "TheBigBangTheory", "a1B2c3D4e5F6g7H8", "ſ", "é",
    "\t", "\x1c", "\x7f", "\n",
]  # fmt: skip


def pieces(alphabet: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(alphabet), max_size=14).map("".join)


PRINTABLE = [p for p in PIECES if all(" " <= c <= "~" for c in p)]
# Names near the obfuscation test's lengths and counts (12, 16 characters; case runs, digits).
words = st.text(alphabet=st.sampled_from("aAbBkKqQxXzZ019f. -_"), min_size=8, max_size=20)
runs = st.integers(1, 40).map(lambda n: "7" * n)
members = st.one_of(
    st.sampled_from([p for p in PRINTABLE if p.startswith(".")]),
    st.builds(lambda a, b, sign: f".vol{a}{sign}{b}.par2", runs, runs, st.sampled_from("+-")),
    st.builds(lambda a: f".PART{a}.rar", runs),
)
files = st.builds(lambda name, member: name + member, words | pieces(PRINTABLE), members)
subjects = st.one_of(
    st.builds(
        lambda title, counter, file, tail: f'{title}{counter}"{file}"{tail}',
        words | pieces(PRINTABLE),
        st.sampled_from(["", " - [1/5] - ", " - File 2 of 9 - ", "[12] [3/4] ", "[123] (1/1) "]),
        files,
        st.sampled_from(["", " yEnc (1/50)", " yEnc"]),
    ),
    st.builds(lambda file: f"{file} yEnc (1/2)", files),
    pieces(PIECES),
    pieces(PRINTABLE),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=80),
    st.text(max_size=60),
    st.builds(
        lambda title, counter, name, tail: f'{title}{counter}"{name}"{tail}',
        pieces(PRINTABLE),
        st.sampled_from(["", " [1/5] - ", " - File 2 of 9 - ", "[12/12]-", " (03/12) "]),
        pieces(PRINTABLE),
        st.sampled_from(["", " yEnc (1/50)", " yEnc (3/7) 123456", " (2/2", " yEnc"]),
    ),
)


def printable_ascii(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


def check(subject: str, rule_set: tuple[Rule, ...] = RULES) -> int:
    """Both readers on every rule that matches ``subject``; how many readings the C made itself."""
    assert NATIVE is not None
    made = 0
    for rule in rule_set:
        m = rule._subject_re.search(subject)
        if m is None:
            continue
        try:
            expected: SubjectMatch | Exception | None = rules._reading(rule, subject, m)
        except ValueError as error:  # int() of a user's counter that is no number
            expected = error
        got = NATIVE.subject_reading(rule.name, rule._slots, subject, m, SubjectMatch)
        if got is False:
            # Handed over: everything not printable ASCII, and the odd counters of user rules.
            assert not printable_ascii(subject) or rule in EXTRA, (rule.name, subject)
            continue
        assert printable_ascii(subject), (rule.name, subject)
        made += 1
        assert not isinstance(expected, Exception), (rule.name, subject, expected)
        assert got == expected, (rule.name, subject)
        if got is not None:
            assert expected is not None
            assert type(got) is SubjectMatch
            assert [type(v) for v in got] == [type(v) for v in expected], (rule.name, subject)
    return made


@settings(max_examples=1500, deadline=None)
@given(subjects)
@example('[01/15] - "Some.Name.vol03+04.par2" yEnc (1/5)')
@example('Name [1/6] - "fe4cf18d2b9a3c7e01d4a5b6.part1.rar" yEnc (1/9)')
@example('[ Show.S01E01.720p-GRP ] [1/3] - "show.part01.rar" yEnc (1/9)')
@example('[123456]-[ ]-[1/2] - "" yEnc (1/2)')
@example('Artist - Album [03/12] - "03 - Song.flac" yEnc (1/3)')
@example('[PRiVATE]-[WtFnZb]-[Name.mkv]-[1/5] - "" yEnc (1/50)')
@example('  [ 1234 ] - [full] x@y --  "a.nfo" yEnc (1/1)')
@example('"a" \' - [100123] [re-up] Some  Name - |')
@example('[12] "a.rar" yEnc (1/2)')
@example('"XkQzLmPwRtYbNcV.rar" yEnc (1/2)')
@example('"aaaaaaaaaaaaaaaa.rar" yEnc (1/2)')
def test_the_c_reads_what_the_python_reads(subject: str) -> None:
    check(subject)


def sample_subjects() -> list[str]:
    """The first part's subject of every file of two sample plans: sample.plan's styles and today's."""
    seen: set[str] = set()
    rng = random.Random(3)
    for release in sample.plan(rng, 300, G, max_parts=3):
        for f in release.files:
            seen.add(sample.subject(release, f, 1))
    today = sample.Today([(G, 1, 4_000)], seed=4, start_time=1_700_000_000, releases_per_plan=20)
    for article, _, _ in today.articles():
        seen.add(article.subject)
    assert len(seen) > 1_000
    return sorted(seen)


def test_the_sample_shapes_are_read_by_the_c() -> None:
    """Every subject style of sample.py (named, request, file-of, noisy, obfuscated, random): the same
    readings, and the C makes them itself, not the Python behind it."""
    seen = sample_subjects()
    made = read = 0
    for subject in seen:
        made += check(subject)
        read += default_rules().match(subject, G) is not None
    assert read > 0.7 * len(seen)  # the rest: random articles' subjects, which no rule reads
    assert made >= read  # each subject a rule reads, read by the C


def pure_match(subject: str) -> SubjectMatch | None:
    """The built-in rules' reading with no C at all: the Python's regexes and _reading."""
    held = accelerator.speedups
    accelerator.speedups = None
    try:
        return default_rules().match(subject, G)
    finally:
        accelerator.speedups = held


def check_match(subject: str) -> bool:
    """The C matcher of the built-in rules against the Python's; whether the C read the subject itself."""
    assert NATIVE is not None
    got = NATIVE.default_match(subject, SubjectMatch)
    if got is False:
        return False
    assert printable_ascii(subject), subject
    expected = pure_match(subject)
    assert got == expected, subject
    if got is not None:
        assert expected is not None
        assert type(got) is SubjectMatch
        assert [type(v) for v in got] == [type(v) for v in expected], subject
    return True


@settings(max_examples=1500, deadline=None)
@given(subjects)
@example('[123456]-[FULL]-[#a.b.x]-[ Name ]-[01/20] - "file.rar" yEnc (1/50)')
@example('[123456]-[  ]-[]-[x]-[1/2]-[ y ]-[3/4] - "f.rar" yEnc (1/5) (2/9)')
@example('[123]-[1/2] - "a" "b"')
@example('Title (2019) - File 1 of 5 - "a.rar" yEnc (1/2)')
@example('xFile 1 of 5 - "a.rar"')
@example('File 1 of 5 - "a.rar"')
@example('A "B" - File 1 of 5 - "a.rar"')
@example('"x" [1/5] "a.rar" yEnc (1/2)')
@example('T - [1/5] - "" yEnc (1/2)')
@example('"" "a.rar" yEnc (1/2)')
@example('Name (1/5) "a.rar" yEnc ((2/3) (12/x) (4/5')
@example('[12]-[ Name ]-[1/2] - "a.rar" yEnc (1/2)')
@example('[123]-[]-[1/2] - "a.rar" yEnc (1/2)')
@example('T - File 1of 5 - "a.rar" yEnc (1/2)')
@example('[PRiVATE]-[WtFnZb]-[Name.mkv]-[1/5] - "" yEnc (1/50)')
def test_the_c_matches_what_the_python_matches(subject: str) -> None:
    check_match(subject)


def test_the_c_matches_the_sample_shapes_itself() -> None:
    """The built-in rules on every subject style of sample.py: the same readings, nearly all made by
    the C (bare subjects, empty quotes and random articles' subjects are the Python's)."""
    subjects = sample_subjects()
    made = sum(check_match(subject) for subject in subjects)
    assert made > 0.7 * len(subjects)


@pytest.mark.fuzz
@settings(max_examples=20_000, deadline=None)
@given(subjects)
def test_the_c_reads_what_the_python_reads_at_length(subject: str) -> None:
    check(subject)
    check_match(subject)


@settings(max_examples=300, deadline=None)
@given(subjects)
def test_the_rule_set_reads_the_same_on_both_paths(subject: str) -> None:
    """RuleSet.match on the C reader and without it (the title cache is shared: it holds the Python's
    own readings)."""
    rule_set = RuleSet(version=1, rules=RULES[:-1])  # EXTRA's user rules whose counters int() reads
    held = accelerator.speedups
    try:
        native = rule_set.match(subject, G)
        accelerator.speedups = None
        pure = rule_set.match(subject, G)
    except ValueError:
        return  # a user rule's counter int() refuses: the Python raises on either path
    finally:
        accelerator.speedups = held
    assert native == pure


def test_a_subject_the_c_leaves_is_read_by_the_python() -> None:
    rule_set = default_rules()
    for subject in ('"Ñame.part01.rar" yEnc (1/5)', '"Name\t.rar" yEnc (1/5)', '"Name.ſ.rar" yEnc (1/5)'):
        rule = next(r for r in rule_set.rules if r._subject_re.search(subject))
        m = rule._subject_re.search(subject)
        assert m is not None and NATIVE is not None
        assert NATIVE.subject_reading(rule.name, rule._slots, subject, m, SubjectMatch) is False
        assert rule_set.match(subject, G) == rules._reading(rule, subject, m) is not None


# The regexes the C code has twins of (_speedups.c names each after its Python), as they were when the
# twins were written: a change to one of these patterns must change its twin too.
TWINS = {
    "naming._PAR2_VOLUME (volume_suffix)": (naming._PAR2_VOLUME, r"\.vol\d+[+-]\d+$", re.I),
    "naming._PART_VOLUME (volume_suffix)": (naming._PART_VOLUME, r"\.part\d+$", re.I),
    "naming._NUMBERED (numbered)": (naming._NUMBERED, r"([rsz])\d{2,3}", 0),
    "naming._HEX (obfuscated_name)": (naming._HEX, r"[0-9a-fA-F]{16,}", 0),
    "naming._RANDOM (obfuscated_name)": (naming._RANDOM, r"[A-Za-z0-9]{12,}", 0),
    "naming._LOWER_RUNS (obfuscated_name)": (naming._LOWER_RUNS, r"[a-z]+", 0),
    "naming._REQUEST_TAG (clean_name_of)": (naming._REQUEST_TAG, r"^\s*\[\s*\d{3,}\s*\]\s*[-–]?\s*", 0),
    "naming._BRACKET_TAGS (bracket_tag)": (
        naming._BRACKET_TAGS,
        r"\[\s*(?:full|repost|re-?up|#?[\w.]+@\w+|#a\.b\.[\w.]+)\s*\]",
        re.I,
    ),
    "naming._EDGE_JUNK (clean_name_of, with naming._EDGES)": (
        naming._EDGE_JUNK,
        r"^[\s\-–_:|\"']+|[\s\-–_:|\"']+$",
        0,
    ),
    "naming._SPACES (clean_name_of)": (naming._SPACES, r"\s{2,}", 0),
    "naming._NORMAL (normalised)": (naming._NORMAL, r"[^0-9a-z]+", 0),
    "rules._REQUEST_PREFIX (subject_reading)": (rules._REQUEST_PREFIX, r"^\s*\[\s*(\d{3,})\s*\]", 0),
}


# The built-in rules the C matcher (default_match) has twins of, in their order, as written: a change to
# one of them, or a rule put before them, must change the C.
MATCHED = [
    ("request_tagged", rules._DEFAULT_RULES[0].subject, None),
    ("counter_file", rules._DEFAULT_RULES[1].subject, None),
    ("file_of", rules._DEFAULT_RULES[2].subject, "file"),
    ("bracketed_file", None, '""'),  # not matched by the C: it hands over a subject this rule would try
    ("name_counter_file", rules._DEFAULT_RULES[4].subject, None),
    ("quoted_file", rules._DEFAULT_RULES[5].subject, None),
]
PART = r"(?:.*\((?P<p>\d+)/(?P<t>\d+)\))?"
AS_WRITTEN = {
    "request_tagged": r"^\[(?P<request>\d{3,})\](?:[-\s]*\[[^\]]*\])*?[-\s]*"
    r"\[\s*(?P<title>[^\]]+?)\s*\][-\s]*"
    r'\[(?P<i>\d+)/(?P<n>\d+)\][-\s]*"(?P<file>[^"]*)"' + PART,
    "counter_file": r'^\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*"(?P<file>[^"]*)"' + PART,
    "file_of": r'(?i)^(?:(?P<title>[^"]*\S)\s*[-–:]?\s*)?\bFile\s+(?P<i>\d+)\s+of\s+(?P<n>\d+)\s*[-–:]?\s*'
    r'"(?P<file>[^"]*)"' + PART,
    "name_counter_file": r'^(?P<title>[^"]*\S)\s*[-–:]?\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*'
    r'"(?P<file>[^"]*)"' + PART,
    "quoted_file": r'^(?P<title>[^"]*?)"(?P<file>[^"]+)"' + PART,
}


def test_the_rules_with_c_twins_are_as_written() -> None:
    built_in = rules._DEFAULT_RULES
    assert [(r.name, r.requires, r.group) for r in built_in[: len(MATCHED)]] == [
        (name, requires, None) for name, _, requires in MATCHED
    ]
    for name, pattern, _ in MATCHED:
        if pattern is not None:
            assert pattern == AS_WRITTEN[name], name
    assert default_rules().for_group(G) is built_in  # what match() asks before it calls the C matcher


def test_the_built_in_rules_sent_as_json_take_the_c_matcher() -> None:
    """An edge worker's rules are the coordinator's JSON read anew (RuleSet.from_json): equal to the
    built-in ones, not the same objects. They take the C matcher all the same (issue 17: they took the
    Python regexes, ~40 % of the worker's index stage); a set that differs in one rule does not."""
    sent = RuleSet.from_json(default_rules().to_json())
    assert sent.rules == rules._DEFAULT_RULES and sent.rules[0] is not rules._DEFAULT_RULES[0]
    assert sent.for_group(G) is rules._DEFAULT_RULES
    changed = json.loads(default_rules().to_json())
    changed["rules"][1]["requires"] = '"'
    assert RuleSet.from_json(json.dumps(changed)).for_group(G) is not rules._DEFAULT_RULES
    extra = json.loads(default_rules().to_json())
    extra["rules"].append({"name": "mine", "subject": r"^(?P<name>x)$"})
    assert RuleSet.from_json(json.dumps(extra)).for_group(G) is not rules._DEFAULT_RULES
    limited = json.loads(default_rules().to_json())
    limited["rules"][0]["group"] = "alt\\.binaries\\.other"
    assert RuleSet.from_json(json.dumps(limited)).for_group(G) is not rules._DEFAULT_RULES


@pytest.mark.parametrize("name", sorted(TWINS))
def test_the_patterns_with_c_twins_are_as_written(name: str) -> None:
    pattern, text, flags = TWINS[name]
    assert (pattern.pattern, pattern.flags & ~re.U) == (text, flags), name


def test_the_edges_the_c_strips_are_the_junk_the_python_strips() -> None:
    """clean_name's plain-case test (_EDGES) and its edge regex (_EDGE_JUNK) strip the same printable
    ASCII characters: the C strips by _EDGES alone."""
    for c in string.printable:
        if " " <= c <= "~":
            assert (c in naming._EDGES) == bool(naming._EDGE_JUNK.fullmatch(c)), repr(c)
