"""Names from article bodies: what a probe reads for a release whose subjects name nothing (issue 16).
Pure: decoded first articles in, names out; catalog/probe.py fetches.

Where the names survive obfuscation:

- the PAR2 index, found by its magic (``PAR2\\0PKT`` at the start of a file's data), not by its
  subject: its File Description packets give every file's real name, size and the MD5 of its first
  16 KiB;
- each file's first article: its ``=ybegin`` line's ``name=`` and ``size=``, and the file's first
  bytes (a yEnc part is 250–750 KB, so the first 16 KiB are nearly always in it).

A file is renamed only on evidence that fits it alone:

1. a PAR2 entry of the same size whose 16 KiB MD5 is that of the file's first bytes (how downloaders
   rename obfuscated files; a hash collision is the only way to a wrong name);
2. else its yEnc ``name=``, when that is not random itself (``looks_obfuscated``) and has a known
   extension: the poster's own name for the file;
3. else the file keeps its posted name. A size alone, or an order, is never taken for a name.

The release is named like the PAR2 names its main files (the base most payload files share), from the
PAR2's names, else from the files' new names; a name that looks random is no name.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from usenet_indexer.indexing.archive_names import first_volume
from usenet_indexer.indexing.archives import ArchiveStart, read_archive_start
from usenet_indexer.indexing.fragment import FileFragment
from usenet_indexer.indexing.naming import FileKind, file_kind, looks_obfuscated, release_base
from usenet_indexer.indexing.par2 import Par2Error, Par2Index, RecoveryHead, read_par2, recovery_head
from usenet_indexer.indexing.volumes import Volume, name_volumes

PAR2_MAGIC = b"PAR2\0PKT"
HASH_BYTES = 16 * 1024  # PAR2's "first 16 KiB" hash
MAX_ARTICLES = 32  # a probe's articles per release (see ``fetch_plan``)
PAR2_TRIES = 3  # small files tried for the PAR2 index, smallest first
MAX_NAME = 255
_NOT_PAYLOAD = (FileKind.PAR2, FileKind.PAR2_VOLUME, FileKind.NFO, FileKind.SFV)


@dataclass(frozen=True, slots=True)
class FirstPart:
    """What a file's first article says about the file."""

    posted: str  # the file's name in the catalog (as its subject gave it)
    yenc_name: str
    size: int  # =ybegin size=: the whole file's
    head_md5: bytes | None  # MD5 of the file's first min(16 KiB, size) bytes, when the article holds them
    par2: Par2Index | None  # the PAR2 packets it holds, when its data starts with the magic
    # The archive headers it holds, when the file's data starts with RAR4, RAR5 or 7z (a password?)
    archive: ArchiveStart | None = None
    # Its recovery slices, when it is a PAR2 recovery volume (indexing/volumes.py names it by them)
    volume: RecoveryHead | None = None


def first_part(posted: str, data: bytes, yenc_name: str, size: int, begin: int | None) -> FirstPart:
    """A decoded first article (``begin``: =ypart begin=, 1-based; None for a single-part post)."""
    head: bytes | None = None
    want = min(HASH_BYTES, size)
    if (begin is None or begin == 1) and len(data) >= want:
        head = hashlib.md5(data[:want], usedforsecurity=False).digest()
    par2: Par2Index | None = None
    volume: RecoveryHead | None = None
    if data.startswith(PAR2_MAGIC):
        try:
            par2 = read_par2(data)
        except Par2Error:
            par2 = None
        if begin is None or begin == 1:
            volume = recovery_head(data, whole=len(data) == size)
    archive = read_archive_start(data) if begin is None or begin == 1 else None
    return FirstPart(posted, yenc_name, size, head, par2, archive, volume)


def volume_renames(name: str, parts: Sequence[FirstPart], index: Par2Index | None) -> dict[str, str]:
    """The recovery volumes among ``parts`` named as par2cmdline names them (indexing/volumes.py), by
    their posted names; none when one of the set's cannot be told."""
    volumes = {p.posted: Volume(p.volume, p.size) for p in parts if p.volume is not None}
    return name_volumes(name, volumes, index)


def safe_name(name: str) -> str | None:
    """A file name fit for an NZB and a download folder, or None: the last path component, without
    control characters, not "." or "..", at most MAX_NAME characters."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if not base or base in (".", "..") or len(base) > MAX_NAME:
        return None
    if any(ord(c) < 32 or ord(c) == 127 or c == "\ufffd" for c in base):
        return None
    return base


def real_looking(name: str) -> bool:
    """A name a poster gave, not a random one: a known extension and a base that does not look random."""
    return file_kind(name) is not FileKind.OTHER and not looks_obfuscated(release_base(name))


def release_name(names: Iterable[str]) -> str | None:
    """The base most payload files share ("x.part01.rar" … "x.part12.rar" → "x"); par2, nfo and sfv do
    not vote unless nothing else is there. None when that base looks random."""
    all_names = [n for n in (safe_name(n) for n in names) if n]
    payload = [n for n in all_names if file_kind(n) not in _NOT_PAYLOAD] or all_names
    if not payload:
        return None
    votes = Counter(release_base(n) for n in payload)
    best = max(votes.items(), key=lambda item: (item[1], item[0]))[0].strip()
    if not best or looks_obfuscated(best):
        return None
    return best


@dataclass(frozen=True, slots=True)
class BodyNames:
    name: str | None  # the release's, None when the bodies name nothing
    source: str  # "par2" or "yenc": what named the release
    renames: dict[str, str] = field(default_factory=dict)  # posted file name -> real name
    files: tuple[str, ...] = ()  # every real name known (categorizing reads them)
    password: bool | None = None  # the first archive volume's headers: passworded? (None: not known)


def name_files(parts: Sequence[FirstPart], par2: Par2Index | None) -> BodyNames:
    """Renames for the files whose first articles were read, and the release's name."""
    entries: dict[tuple[int, bytes], set[str]] = {}
    par2_names: list[str] = []
    if par2 is not None:
        for f in par2.files:
            name = safe_name(f.name)
            if name is not None:
                entries.setdefault((f.size, f.hash_16k), set()).add(name)
                par2_names.append(name)
    renames: dict[str, str] = {}
    for part in parts:
        new: str | None = None
        if part.head_md5 is not None:
            matched = entries.get((part.size, part.head_md5), set())
            if len(matched) == 1:
                new = next(iter(matched))
        if new is None:
            yenc = safe_name(part.yenc_name)
            if yenc is not None and real_looking(yenc):
                new = yenc
        if new is not None and new != part.posted:
            renames[part.posted] = new
    name = release_name(par2_names) if par2_names else None
    source = "par2"
    if name is None:
        name = release_name(renames.values())
        source = "yenc"
    # The index file under a random name too: named as par2 names its index, after the set, so that
    # downloaders (which pick PAR2 files by their extension) verify and repair with it.
    indexes = [p for p in parts if p.par2 is not None and p.par2.files and not p.par2.recovery_slices]
    if (
        name is not None
        and len(indexes) == 1
        and indexes[0].posted not in renames
        and not real_looking(indexes[0].posted)
    ):
        renames[indexes[0].posted] = f"{name}.par2"
    # Its recovery volumes under random names too (no packet names them): by their slices.
    if name is not None and len(indexes) == 1:
        for posted, new in volume_renames(name, parts, indexes[0].par2).items():
            if posted not in renames and not real_looking(posted):
                renames[posted] = new
    renames = _unique(renames, [p.posted for p in parts])
    return BodyNames(name, source, renames, tuple(sorted(set(par2_names) | set(renames.values()))))


def set_renames(
    file_names: Sequence[str], par2_names: Sequence[str], release: str, index_file: str | None = None
) -> dict[str, str]:
    """Renames for the members of one obfuscated set (``<hex>.part01.rar`` … ``<hex>.vol0+1.par2``),
    whose first articles are not fetched: the part of the name after the random base says what each
    file is, and the PAR2 names the set's real files. Once a member's suffix is a PAR2 name under the
    release's base, or the PAR2 was read from a member (``index_file``, its posted name), the random base
    stands for the real one (``member_renames``). Only for a release of one random base: two sets could
    swap suffixes."""
    bases = {release_base(n) for n in file_names if looks_obfuscated(release_base(n))}
    if len(bases) != 1 or not release:
        return {}
    (base,) = bases
    spelled = {n[len(release) :].casefold(): n for n in par2_names if release_base(n) == release}
    members = [n for n in file_names if n.startswith(base) and release_base(n) == base]
    from_member = index_file is not None and index_file.startswith(base) and release_base(index_file) == base
    if not from_member and not any(n[len(base) :].casefold() in spelled for n in members):
        return {}
    return _unique(member_renames(members, base, release, spelled), file_names)


def set_base(renames: dict[str, str]) -> tuple[str, str] | None:
    """The (random base, real base) a probe's renames of one obfuscated set establish, or None: the
    batch store renames the set's members that come after the probe by it, as the probe would have
    (the catalog must not depend on whether a file arrived before its release was probed)."""
    pairs = set()
    for old, new in renames.items():
        base, real = release_base(old), release_base(new)
        same_suffix = old[len(base) :].casefold() == new[len(real) :].casefold()
        if looks_obfuscated(base) and old.startswith(base) and new.startswith(real) and same_suffix:
            pairs.add((base, real))
    return next(iter(pairs)) if len(pairs) == 1 else None


def with_members(renames: dict[str, str], names: Iterable[str]) -> dict[str, str]:
    """``renames`` and, for the files among ``names`` they leave unnamed, the renames of the set they
    establish (``set_base``), never onto a name already taken (two files under one name would merge
    as one). A probe renames the files it read; a member that reached the release after that read
    (a batch stored meanwhile, or after the probe) is renamed as the probe would have renamed it: the
    catalog of test_run's resumed run held ``<hash>.part01.rar`` where the uninterrupted one held the
    real name, by when that file's batch came."""
    established = set_base(renames)
    if established is None:
        return renames
    unnamed = [name for name in names if name not in renames]
    taken = set(renames.values())
    members = member_renames(unnamed, *established)
    return {**{old: new for old, new in members.items() if new not in taken}, **renames}


def member_renames(
    names: Iterable[str], base: str, real: str, spelled: dict[str, str] | None = None
) -> dict[str, str]:
    """``<base><suffix>`` → ``<real><suffix>`` for the members of the set ``base`` among ``names``;
    ``spelled``: the PAR2's spelling of a suffix (casefolded suffix → name), used where there is one."""
    out: dict[str, str] = {}
    for name in names:
        if not name.startswith(base) or release_base(name) != base:
            continue
        suffix = name[len(base) :]
        out[name] = (spelled or {}).get(suffix.casefold(), f"{real}{suffix}")
    return out


def password(parts: Sequence[FirstPart], real_names: dict[str, str]) -> tuple[bool | None, str | None]:
    """Whether the release's first archive volume is passworded (None: not known), and the posted name
    of that volume when its first article was not among ``parts`` (to fetch). ``real_names``: posted
    name -> the name it is known by now."""
    first = first_volume(list(real_names.values()))
    if first is None:
        return None, None
    posted = next((old for old, new in real_names.items() if new == first), None)
    read = next((p for p in parts if p.posted == posted), None)
    if read is None:
        return None, posted
    return (read.archive.encrypted if read.archive is not None else None), None


def _unique(renames: dict[str, str], posted: Sequence[str]) -> dict[str, str]:
    """Renames that make no two files share a name (two files under one name would merge as one)."""
    targets = Counter(renames.values())
    kept = {old: new for old, new in renames.items() if targets[new] == 1}
    untouched = {p for p in posted if p not in kept}
    return {old: new for old, new in kept.items() if new not in untouched}


def apply_renames(
    files: Sequence[FileFragment], renames: dict[str, str]
) -> tuple[dict[str, str], list[FileFragment]]:
    """The renames that hold among all of a release's ``files`` (none gives two files one name), and
    the files renamed, in the catalog's order (name, part total)."""
    names = {f.name for f in files}
    held = {old: new for old, new in renames.items() if old in names and old != new}
    while True:  # a rename dropped leaves its file under its old name, which may clash with another
        untouched = names - held.keys()
        targets = Counter(held.values())
        kept = {old: new for old, new in held.items() if targets[new] == 1 and new not in untouched}
        if kept == held:
            break
        held = kept
    renamed = [replace(f, name=held.get(f.name, f.name)) for f in files]
    return held, sorted(renamed, key=lambda f: (f.name, f.parts_total))


def par2_index(parts: Sequence[FirstPart]) -> Par2Index | None:
    """The PAR2 packets among the parts that describe the most files (an index file, else a volume)."""
    found = [p.par2 for p in parts if p.par2 is not None and p.par2.files]
    return max(found, key=lambda index: len(index.files), default=None)


@dataclass(frozen=True, slots=True)
class FetchPlan:
    """The first articles a probe fetches: ``par2`` one at a time until a PAR2 index turns up, then
    ``others`` (as (posted file name, message-id))."""

    par2: tuple[tuple[str, str], ...]
    others: tuple[tuple[str, str], ...]


def fetch_plan(
    files: Sequence[FileFragment], par2_message_id: str = "", cap: int = MAX_ARTICLES
) -> FetchPlan:
    """Which first articles to fetch, at most ``cap`` in all.

    - For the PAR2 index: the article a subject named (``par2_message_id``), else the files the names
      say are PAR2, then the smallest files (an index file is a few KB, one article): PAR2_TRIES.
    - Then each file whose posted name is random (a random base without a known extension, or one
      that no other file of the release shares): its yEnc name and first bytes may name it. The
      members of one obfuscated set (``<hex>.part01.rar`` … ``<hex>.par2``) are not fetched: the PAR2
      names the release, and their suffixes already say what each file is.

    Why 32: a release of per-file random names is typically 10–60 files; 32 articles (~24 MB at
    750 KB a part) name the release (the PAR2 alone does) and most of its files, and a probe of a
    hundred-volume release costs no more than a third of its first parts.
    """
    firsts: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for f in files:
        if f.parts and f.parts[0] == 1 and f.message_ids:
            firsts[f.name] = f.message_id_list()[0]
            sizes[f.name] = f.size
    par2: list[tuple[str, str]] = []
    if par2_message_id:
        owner = next((n for n, m in firsts.items() if m == par2_message_id), "")
        par2.append((owner, par2_message_id))
    else:
        named = sorted((n for n in firsts if file_kind(n) is FileKind.PAR2), key=lambda n: (sizes[n], n))
        smallest = sorted(firsts, key=lambda n: (sizes[n], n))
        for n in [*named, *smallest]:
            if len(par2) >= PAR2_TRIES:
                break
            if all(n != held for held, _ in par2):
                par2.append((n, firsts[n]))
    tried = {n for n, _ in par2}
    shared = Counter(release_base(n) for n in firsts)

    def random_name(n: str) -> bool:
        # A random base with no known extension, or one no other file shares ("<hex>.rar" per file):
        # not the members of one obfuscated set, whose suffixes already say what each file is.
        base = release_base(n)
        return looks_obfuscated(base) and (file_kind(n) is FileKind.OTHER or shared[base] == 1)

    others = [(n, firsts[n]) for n in sorted(firsts) if n not in tried and random_name(n)]
    room = max(0, cap - len(par2))
    return FetchPlan(tuple(par2[:cap]), tuple(others[:room]))


__all__ = [
    "HASH_BYTES",
    "MAX_ARTICLES",
    "PAR2_MAGIC",
    "BodyNames",
    "FetchPlan",
    "FirstPart",
    "apply_renames",
    "fetch_plan",
    "first_part",
    "member_renames",
    "name_files",
    "par2_index",
    "password",
    "real_looking",
    "release_name",
    "safe_name",
    "set_base",
    "set_renames",
    "volume_renames",
]
