"""Subject rules: ordered, group-scoped regexes that read a posting's subject.

A rule's subject pattern names what it extracts with named groups:

``name``     the collection (release) name as posted, e.g. the name in a request post's brackets
``file``     the file name, usually the quoted part
``title``    text around the file name that may name the release: used only when the file's base name
             looks obfuscated (a hash), and then only what is left of it once tags are dropped
``i``, ``n`` the file counter: file i of n in the release
``p``, ``t`` the part counter: yEnc part p of t of the file
``request``  a request id such as ``[123456]``

Rules are tried in order; the first whose group scope fully matches the group name and whose subject
pattern matches wins.

Noise (issue 16). Posting tools wrap the usual form in tags and text: ``[PRiVATE]-[WtFnZb]-[Name]-[1/8] -
"Name.part1.rar" yEnc (1/100)``, a size after the part counter, a channel or a password tag before the
file counter, and that text may differ from one file of a release to the next (a prefix that held each
file's name made each file a release of its own). So the built-in rules read the text before the counter
or the quoted name as a ``title``, not as the ``name``, and the quoted file name decides the file and
the release, by its base name (naming.release_base). The title, once the file's own name and tags are
dropped from it (``_title``), names the release only where base names cannot tie the files together: a
posting of several files that are not members of one set ("Artist - Album [03/12] - "03 - Song.flac"":
a base per track, the sample's albums), a file whose base is a hash ("Name [1/6] - "fe4cf18d…" yEnc"),
and a set member whose base the title spells out (a request's "[ Show.S01E01.720p-GRP ]" around
"show.part01.rar"). Tags alone never name one, nor words before a set's files that do not spell its
base (a banner: keyed by it, two sets of one poster with as many files were one release).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from usenet_indexer import accelerator
from usenet_indexer.indexing import naming
from usenet_indexer.indexing.naming import (
    SET_MEMBERS,
    FileKind,
    clean_name,
    file_kind,
    looks_obfuscated,
    normalise,
    release_base,
)

GROUP_ORDER = ("name", "file", "title", "i", "n", "p", "t", "request")  # Rule._slots' order
GROUP_NAMES = frozenset(GROUP_ORDER)


class RuleError(ValueError):
    """A rule or rule set that cannot be used; the message says which rule and why."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One subject pattern, optionally limited to groups whose name fully matches ``group``."""

    name: str
    subject: str
    group: str | None = None
    # A text the subject must contain (compared in lower case) for the rule to be tried: a cheap test
    # that spares the regex on subjects it cannot match.
    requires: str | None = None
    _subject_re: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _group_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    # Where each of GROUP_ORDER's groups is in the match's groups() (-1: the pattern has none, which
    # reads as the None appended after them): _reading indexes a tuple, not a dict made per file.
    _slots: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _requires: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise RuleError("a rule needs a non-empty name")
        if not isinstance(self.subject, str) or not self.subject:
            raise RuleError(f"rule {self.name!r}: the subject pattern is empty")
        subject_re = _compile(self.name, "subject", self.subject)
        unknown = set(subject_re.groupindex) - GROUP_NAMES
        if unknown:
            raise RuleError(
                f"rule {self.name!r}: subject pattern {self.subject!r} has unknown named groups "
                f"{sorted(unknown)}; use only {sorted(GROUP_NAMES)}"
            )
        names = set(subject_re.groupindex)
        if not names & {"name", "file"}:
            raise RuleError(
                f"rule {self.name!r}: subject pattern {self.subject!r} names neither (?P<name>...) "
                "nor (?P<file>...): it would extract nothing"
            )
        for a, b in (("i", "n"), ("p", "t")):
            if (a in names) != (b in names):
                raise RuleError(
                    f"rule {self.name!r}: subject pattern {self.subject!r} has (?P<{a}>...) or "
                    f"(?P<{b}>...) without the other; a counter needs both"
                )
        if self.requires is not None and (not isinstance(self.requires, str) or not self.requires):
            raise RuleError(f"rule {self.name!r}: requires is a non-empty text when given")
        object.__setattr__(self, "_subject_re", subject_re)
        index = subject_re.groupindex
        object.__setattr__(self, "_slots", tuple(index[g] - 1 if g in index else -1 for g in GROUP_ORDER))
        object.__setattr__(self, "_requires", None if self.requires is None else self.requires.lower())
        group_re = None if self.group is None else _compile(self.name, "group", self.group)
        object.__setattr__(self, "_group_re", group_re)

    def applies_to(self, group: str) -> bool:
        return self._group_re is None or self._group_re.fullmatch(group) is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "subject": self.subject}
        if self.group is not None:
            out["group"] = self.group
        if self.requires is not None:
            out["requires"] = self.requires
        return out


def _compile(rule: str, what: str, pattern: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise RuleError(f"rule {rule!r}: the {what} pattern must be a string, not {type(pattern).__name__}")
    try:
        return re.compile(pattern)
    except re.error as error:
        raise RuleError(f"rule {rule!r}: {what} pattern {pattern!r} does not compile: {error}") from None


class SubjectMatch(NamedTuple):
    """What the rules read from one subject (a NamedTuple: made once per new file, it must be cheap)."""

    rule: str
    name: str  # the release's display name: the collection, cleaned
    collection: str  # the release name as posted (before cleaning)
    file_name: str
    file_index: int  # 0: unknown
    file_total: int  # 0: unknown
    part: int
    part_total: int
    request_id: str | None
    obfuscated: bool
    kind: FileKind
    # Where the part number starts in the subject, or -1: the indexer uses it to check that the
    # subject's last "(" opens the part counter, which lets it cache the reading for every part.
    part_at: int = -1


_RULE_FIELDS = frozenset({"name", "subject", "group", "requires"})
_REQUEST_PREFIX = re.compile(r"^\s*\[\s*(\d{3,})\s*\]")
_TRAILER = " \t-–:|"


def _trimmed(name: str) -> str:
    """A name without the separators (and a stray "yEnc") between it and the counter that follows."""
    name = name.rstrip(_TRAILER)
    if name[-4:].lower() == "yenc":
        name = name[:-4].rstrip(_TRAILER)
    return name.strip()


@dataclass(frozen=True, slots=True)
class RuleSet:
    """A versioned, ordered list of rules."""

    version: int
    rules: tuple[Rule, ...]
    _by_group: dict[str, tuple[Rule, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 0:
            raise RuleError(f"a rule set's version is a non-negative integer, not {self.version!r}")
        object.__setattr__(self, "rules", tuple(self.rules))
        seen: set[str] = set()
        for rule in self.rules:
            if not isinstance(rule, Rule):
                raise RuleError(f"a rule set holds Rule objects, not {type(rule).__name__}")
            if rule.name in seen:
                raise RuleError(f"rule {rule.name!r} appears twice in rule set version {self.version}")
            seen.add(rule.name)

    def for_group(self, group: str) -> tuple[Rule, ...]:
        rules = self._by_group.get(group)
        if rules is None:
            rules = tuple(rule for rule in self.rules if rule.applies_to(group))
            # Equal, not the same objects: an edge worker's rules come from the coordinator as JSON
            # (from_json), new Rule objects equal to the built-in ones, and with `is` here its every
            # new file took the regexes in Python instead of the C matcher (issue 17: index 1.3
            # core-µs a header in bench/e2e.py, ~0.8 in process with default_rules()). A rule is its
            # name, pattern, group and requires (the rest is compiled from them), so equal rules read
            # every subject alike.
            if rules == _DEFAULT_RULES:
                rules = _DEFAULT_RULES  # the built-in rules, which the C matcher knows (match)
            if len(self._by_group) > 10_000:  # a worker sees few groups; never let this grow unbounded
                self._by_group.clear()
            self._by_group[group] = rules
        return rules

    def matcher(self, group: str, *, native: bool = True) -> Callable[[str], SubjectMatch | None]:
        """``match(subject, group, native=native)`` for one group, what does not depend on the subject
        decided once: the indexer reads a subject once per new file, and asking which rules apply,
        and whether the C knows them, was ~0.3 µs of each reading (issue 17)."""
        speedups = accelerator.speedups if native else None
        if speedups is None or self.for_group(group) is not _DEFAULT_RULES:
            return partial(self.match, group=group, native=native)
        default_match = speedups.default_match

        def match(subject: str) -> SubjectMatch | None:
            known = default_match(subject, SubjectMatch)
            return self.match(subject, group, native=native) if known is False else known

        return match

    def match(self, subject: str, group: str, *, native: bool = True) -> SubjectMatch | None:
        """What the first applicable rule reads from ``subject``, or None when no rule matches.

        ``native``: use the C accelerator where it is built (the same readings), or not (False: the
        pure-Python path of an indexer made with ``native=False``)."""
        rules = self.for_group(group)
        # The C twins where they are built (asked here, not once: tests switch paths): the built-in
        # rules' regexes and _reading for the subjects they know, and _reading for any rule's match. Both
        # return False for a subject they leave to the Python (anything but printable ASCII).
        speedups = accelerator.speedups if native else None
        if speedups is not None and rules is _DEFAULT_RULES:
            known = speedups.default_match(subject, SubjectMatch)
            if known is not False:
                return known
        lower = subject.lower()
        for rule in rules:
            requires = rule._requires
            if requires is not None and requires not in lower:
                continue
            m = rule._subject_re.search(subject)
            if m is not None:
                found = (
                    False
                    if speedups is None
                    else speedups.subject_reading(rule.name, rule._slots, subject, m, SubjectMatch)
                )
                if found is False:
                    found = _reading(rule, subject, m)
                if found is not None:
                    return found
        return None

    def to_json(self) -> str:
        return json.dumps({"version": self.version, "rules": [rule.to_dict() for rule in self.rules]})

    @classmethod
    def from_json(cls, text: str | bytes) -> RuleSet:
        try:
            data = json.loads(text)
        except RecursionError:  # 5,000 nested brackets in the admin form were a 500 (issue 15)
            raise RuleError("a rule set is JSON nested a few levels deep, not thousands") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise RuleError(f"a rule set is JSON; this is not: {error}") from None
        if not isinstance(data, dict) or set(data) != {"version", "rules"}:
            raise RuleError('a rule set is a JSON object with exactly "version" and "rules"')
        rules = data["rules"]
        if not isinstance(rules, list):
            raise RuleError('a rule set\'s "rules" is a list')
        built = []
        for index, item in enumerate(rules):
            if not isinstance(item, dict) or not {"name", "subject"} <= set(item) <= _RULE_FIELDS:
                raise RuleError(
                    f'rule #{index + 1} must be an object with "name", "subject" and optionally '
                    '"group" and "requires"'
                )
            built.append(
                Rule(item["name"], item["subject"], group=item.get("group"), requires=item.get("requires"))
            )
        return cls(version=data["version"], rules=tuple(built))


# 18 digits always fit an int64 (the native scan's MAX_DIGITS, _speedups.c); longer counters read as none.
MAX_DIGITS = 18


def _reading(rule: Rule, subject: str, m: re.Match[str]) -> SubjectMatch | None:
    # The groups by Rule._slots, None for a group the pattern lacks (the appended last item): this runs
    # once per new file, and a groupdict with its lookups was a fifth of it.
    g = (*m.groups(), None)
    s_name, s_file, s_title, s_i, s_n, s_p, s_t, s_request = rule._slots
    raw_file = (g[s_file] or "").strip().strip('"').strip()
    name = g[s_name]
    raw_name = _trimmed(name) if name else ""
    title = g[s_title] or ""
    if not raw_file and not raw_name:
        # No file name (empty quotes): the text around them is all there is, as a name.
        raw_name = _trimmed(title)
        title = ""
        if not raw_name:
            return None
    file_name = raw_file or raw_name
    # A counter of more than MAX_DIGITS digits reads as none; the indexer drops parts above their total
    # as bad_part.
    p, t, i, n = g[s_p], g[s_t], g[s_i], g[s_n]
    part = None if p is None or len(p) > MAX_DIGITS else int(p)
    part_total = None if t is None or len(t) > MAX_DIGITS else int(t)
    index = None if i is None or len(i) > MAX_DIGITS else int(i)
    total = None if n is None or len(n) > MAX_DIGITS else int(n)
    if p is not None and (part is None or part_total is None):
        return None
    if part is None or part_total is None:
        part, part_total = 1, 1  # a post without a part counter is a single part
    if index is None or total is None:
        index, total = 0, 0
    kind = file_kind(file_name)
    hashed: bool | None = None  # whether the base looks obfuscated, where that was asked
    base = ""
    if raw_name and raw_file:
        collection = raw_name  # a rule that names the release outright
    else:
        # The file's base name: every member of a set (rar volumes, par2, nfo) shares it, whatever
        # noise surrounds it in each file's subject.
        collection = base = release_base(file_name)
        # Where the base cannot tie a posting's files together, its title does (text that is not the
        # file's own name nor tags): a file whose base is a hash, and a posting of several files that
        # are not members of one set ("Artist - Album [03/12] - "03 - Song.flac"": a base per track).
        # A set member takes the title only where it spells out the base ("[ Show.S01E01.720p-GRP ]"
        # around "show.part01.rar", the album's "Artist - Album.par2"): a banner or other words
        # before a set's files name nothing, and keyed by them, two sets of one poster were one.
        hashed = looks_obfuscated(base) if title and raw_file else None
        if hashed is not None and (total > 1 or hashed):
            found = _title(title, raw_file, base, hashed)
            if found is not None and (
                kind not in SET_MEMBERS
                or hashed
                # a plain test first: most titles that spell out the base spell it the same way
                or base.lower() in found.lower()
                or normalise(base) in normalise(found)
            ):
                collection = found
    request = g[s_request]
    if request is None:
        prefix = _REQUEST_PREFIX.match(subject)
        request = prefix.group(1) if prefix else None
    shown = clean_name(collection)
    # The base's reading where the name is the base (most subjects): looks_obfuscated once a file.
    obfuscated = hashed if hashed is not None and shown == base else looks_obfuscated(shown)
    return SubjectMatch(
        rule.name,
        shown,
        collection,
        file_name,
        index,
        total,
        part,
        part_total,
        request,
        obfuscated,
        kind,
        m.start(s_p + 1) if p is not None else -1,
    )


# Tags posting tools and sites put around a subject, which name nothing: request numbers and other
# numbers, channels (#a.b.x, x@EFNet), [FULL], [PRiVATE]-[WtFnZb], counters, nzb-monkey's {{password}}.
# Each bracket's content is judged by _is_tag, not by alternatives in one regex: blanks that several
# quantifiers could each match made "[" and 2,000 spaces take 2.4 s (a poster writes the subject).
_BRACKETED = re.compile(r"\[([^\[\]]*)\]|\{\{[^{}]*\}\}")
_TAG_WORDS = frozenset({"", "full", "repost", "reup", "re-up", "private", "wtfnzb", "partial"})
_NOT_NUMBERS = re.compile(r"[^\d\s/]")
_CHANNEL = re.compile(r"#?[\w.-]*@[\w.-]*|#[\w.-]*")


def _is_tag(content: str) -> bool:
    word = content.strip().lower()
    return word in _TAG_WORDS or not _NOT_NUMBERS.search(word) or _CHANNEL.fullmatch(word) is not None


def _untagged(match: re.Match[str]) -> str:
    content = match.group(1)
    return " " if content is None or _is_tag(content) else match.group()


def _without(text: str, part: str) -> str:
    """``text`` with every occurrence of ``part`` (in any case) replaced by a blank. String methods, not
    ``re.sub(re.escape(part))``: a pattern per file compiled anew cost 40 % of the indexing rate."""
    lower, wanted = text.lower(), part.lower()
    if not wanted or wanted not in lower:
        return text
    if len(lower) != len(text):  # a letter whose lower case is longer: positions differ, use the regex
        return re.sub(re.escape(part), " ", text, flags=re.I)
    out: list[str] = []
    at = 0
    while (found := lower.find(wanted, at)) >= 0:
        out += (text[at:found], " ")
        at = found + len(wanted)
    out.append(text[at:])
    return "".join(out)


def _title(text: str, file_name: str, base: str, hashed: bool) -> str | None:
    """What names a release in the text around a file name: ``text`` without the file's own name and
    tags, when what is left reads as a title (letters, not a hash); else None."""
    # The file's own name differs from file to file (and a hash base too): left in, it would make a
    # title per file. A readable base is what titles often begin with ("Name (2019) [FLAC]").
    for own in (file_name, base) if hashed else (file_name,):
        text = _without(text, own)
    return _cached_title(text)


def _cached_title(text: str) -> str | None:
    """What a text without the file's name reads as, as a title (_read_title), kept: the files of a
    posting share their title (the rules run once per new file, and cleaning a title cost a tenth of
    bench/index.py's rate). The C reader looks in _TITLES itself and calls this on a miss."""
    if text in _TITLES:
        return _TITLES[text]
    if len(_TITLES) > 20_000:
        _TITLES.clear()
    found = _TITLES[text] = _read_title(text)
    return found


_TITLES: dict[str, str | None] = {}


# A site's banner between angle brackets (">ghost-of-usenet.org<", "<<www.town.ag>>"): a domain names
# no release (the sample's noisy_site posts, 73 % of noisy releases named wrongly before). Closed by the
# brackets that mirror its opening: ">a<>b<" is two banners (closing on "<>" took the second one's ">",
# and the second banner became the release's name; found by hypothesis). A closing run leaves the
# opening of a banner of the other kind right after it: ">a<<<b>>" is ">a<" and "<<b>>" (hypothesis again,
# session 9: the whole run closed the first, and the second became the name).
_BANNER = re.compile(
    r">+\s*([^<>\s]+)\s*(?:<+?(?=<+[^<>\s]+\s*>)|<+)"
    r"|<+\s*([^<>\s]+)\s*(?:>+?(?=>+[^<>\s]+\s*<)|>+)"
)
_DOMAIN = re.compile(r"(?:www\.)?[\w-]+(?:\.[\w-]+)+")
# Short words in brackets before a title ("[TOWN] Artist - Album", "[PRiVATE]-[QkWrTz]-"): a poster's
# or a site's tags.
_LEADING_TAG = re.compile(r"[\s\-|:–—]*\[[A-Za-z]{2,8}\](?:[\s\-|:–—]*\[[A-Za-z]{2,8}\])*[\s\-|:–—]*")


_FIELDS = re.compile(r"\[[^\[\]]*\](?:\s*-\s*\[[^\[\]]*\])+")


def _unbannered(match: re.Match[str]) -> str:
    return " " if _DOMAIN.fullmatch(match.group(1) or match.group(2)) else match.group()


def _read_title(text: str) -> str | None:
    text = _BRACKETED.sub(_untagged, _BANNER.sub(_unbannered, text))
    leading = _LEADING_TAG.match(text)
    if leading is not None:  # alone, it is no title either: the file's base names the release
        text = text[leading.end() :]
    text = clean_name(_trimmed(text))
    if text[:1] == "[" and text[-1:] == "]" and text.count("[") == 1:
        text = clean_name(text[1:-1])  # "[Name]" once the tags around it are gone
    elif _FIELDS.fullmatch(text):
        # "[tag]-[Name]": bracketed fields joined by dashes, the title last (WtFnZb's form, with a
        # tag of the poster's own in place of "WtFnZb")
        text = clean_name(_BRACKETED.findall(text)[-1])
    if (
        len(normalise(text)) < 3
        or not any(c.isalpha() for c in text)
        or looks_obfuscated(text)
        or _is_tag(text)  # a rule's brackets held a tag ("[12345]-[REPOST]-[1/8]")
    ):
        return None
    return text


# The part counter is the last "(p/t)" of a subject; a greedy ".*" before it finds the last one.
_PART = r"(?:.*\((?P<p>\d+)/(?P<t>\d+)\))?"
_DEFAULT_RULES = (
    # [123456]-[FULL]-[#a.b.group]-[ Name ]-[01/20] - "file.rar" yEnc (1/50)
    Rule(
        "request_tagged",
        r"^\[(?P<request>\d{3,})\](?:[-\s]*\[[^\]]*\])*?[-\s]*\[\s*(?P<title>[^\]]+?)\s*\][-\s]*"
        r'\[(?P<i>\d+)/(?P<n>\d+)\][-\s]*"(?P<file>[^"]*)"' + _PART,
    ),
    # [01/15] - "file.ext" yEnc (1/50)
    Rule(
        "counter_file",
        r'^\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*"(?P<file>[^"]*)"' + _PART,
    ),
    # Title - File 01 of 15 - "file.ext" yEnc (1/50). The title is greedy up to the first quote and backs
    # off to the counter, which sits just before it: a lazy title retried the rest at every character.
    Rule(
        "file_of",
        r'(?i)^(?:(?P<title>[^"]*\S)\s*[-–:]?\s*)?\bFile\s+(?P<i>\d+)\s+of\s+(?P<n>\d+)\s*[-–:]?\s*'
        r'"(?P<file>[^"]*)"' + _PART,
        requires="file",
    ),
    # [PRiVATE]-[WtFnZb]-[file.ext]-[1/5] - "" yEnc (1/50): the file name in brackets, empty quotes
    Rule(
        "bracketed_file",
        r'^(?P<title>[^"]*?)\[(?P<file>[^\[\]"]*?\S\.[A-Za-z0-9]{2,4})\][-\s]*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]'
        r'\s*[-–:]?\s*""' + _PART,
        requires='""',
    ),
    # Any text - [01/15] - "file.ext" yEnc (1/50) any text, and Text (01/15) "file.ext" yEnc (1/50)
    Rule(
        "name_counter_file",
        r'^(?P<title>[^"]*\S)\s*[-–:]?\s*[\[(](?P<i>\d+)\s*/\s*(?P<n>\d+)[\])]\s*[-–:]?\s*'
        r'"(?P<file>[^"]*)"' + _PART,
    ),
    # "file.ext" yEnc (1/50), with or without text before the quote
    Rule("quoted_file", r'^(?P<title>[^"]*?)"(?P<file>[^"]+)"' + _PART),
    # Name [01/15] file.ext yEnc (1/50), unquoted file name after a file counter: no quotes say where
    # the file name ends, so the name before the counter names the release
    Rule(
        "name_counter_bare",
        r'^(?P<name>.*?\S)\s*[-–:]?\s*[\[(](?P<i>\d+)/(?P<n>\d+)[\])]\s*[-–:]?\s*(?P<file>[^\s"]\S*)'
        r"\s*(?:yEnc)?\s*\((?P<p>\d+)/(?P<t>\d+)\)\s*\S*$",
    ),
    # file.ext yEnc (1/50)
    Rule("bare_part", r"^(?P<file>.*?\S)\s*(?:yEnc)?\s*\((?P<p>\d+)/(?P<t>\d+)\)\s*\S*$"),
    # file.ext yEnc: a single-part binary
    Rule("bare_yenc", r"(?i)^(?P<file>.*?\S)\s+yEnc\s*$"),
)


# The C reader (_speedups.subject_reading) is handed the Python's tables once, so that each rule has its
# home here and in naming.py; tests/unit/indexing/test_subject_reading.py compares the two readers.
if accelerator.speedups is not None:
    accelerator.speedups.subject_tables(
        naming._EXTENSIONS,
        naming._MEMBER_EXTENSIONS,
        SET_MEMBERS,
        naming.NOT_BY_EXTENSION,
        _TITLES,
        _cached_title,
        _TRAILER,
        naming._EDGES,
        naming._TAIL,
        tuple(rule.name for rule in _DEFAULT_RULES),
    )


def default_rules() -> RuleSet:
    """The built-in rule set (version 0): the subject formats posters actually send."""
    return RuleSet(version=0, rules=_DEFAULT_RULES)


def test(subject: str, group: str, rules: RuleSet | None = None) -> SubjectMatch | None:  # noqa: PT028
    """What ``rules`` (default: the built-in set) read from ``subject`` posted in ``group``."""
    return (rules or default_rules()).match(subject, group)


test.__test__ = False  # type: ignore[attr-defined]  # not a pytest test, whatever its name


__all__ = ["GROUP_NAMES", "Rule", "RuleError", "RuleSet", "SubjectMatch", "default_rules", "test"]
