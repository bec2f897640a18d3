"""A burst of loose articles split into files and releases by their bodies (issue 16). Pure.

Under fully random subjects nothing in the overview says which article is which part of which file.
What does: a file's parts are posted one after the other, all of one size but the last, which is
shorter (equal :bytes within a file), and the first article of each file starts with a yEnc header
``=ybegin part=1 total=T … size=S`` and ``=ypart begin=1 end=B``: the file has T parts of B bytes, the
last of S - (T-1)·B. ``Walk`` reads one first article per file, in article order:

1. the first article not yet placed is fetched; its header says part 1 of T: the file is it and the
   next T-1 articles, confirmed by their sizes (``arrange``: all of one size but the last, which has
   the size the header predicts). Posting over several connections swaps neighbours now and then: the
   last part may come before the one before it, or after the next file's first; part 1 after part 2
   or 3 (the next ``LOOKAHEAD`` articles are fetched until part 1 of the same file comes); the last
   part of a file before after this one's first (skipped). Where the pieces fit out of posting order,
   or fit two ways, or a piece of about the last part's size follows, headers decide: the piece taken
   as the last part must say it is, and pieces left out or posted after it whose they are.
2. an article whose header says a part of a file already placed is a repost, and is left out, once
   the file is seen to hold that part (its pieces' headers, the one at that part's place first). A
   file found holding a piece of another instead is revoked (unsure), and its pieces are read: a file
   whose piece it held is found out in turn. Sizes alone cannot tell an article carried several
   places in posting order (the sample's swaps) from a neighbour's part of the same size; the part it
   displaced, read later, names the file it belongs to.
3. anything else (not yEnc, a part other than 1 or 2, sizes that do not fit) is *unsure*: the article
   and those after it up to the next shorter one (the unconfirmed file's presumed end) stay unplaced.
   A piece made unsure by its size alone, among a file's pieces or just before them, is read before
   the file is placed (it may be the file's own). A file given up whose every part has been read is
   placed by those headers. An unplaced article is never given a name: a burst that does not split
   cleanly keeps its articles unnamed (issue 16: no wrong name with confidence).

At most ``cap`` articles are fetched; what is past the cap stays unplaced. Last, the pieces made
unsure by their size alone just after a placed file are read (one may be its part, carried off). A
displaced part past the cap, or made unsure by its size alone further from its file, is never read:
there a file could keep a neighbour's piece (not seen in generated bursts since; reading every unsure
piece cost 13 % more of the probe's articles on the demo's sample: docs/PERFORMANCE.md).

Then ``releases`` sorts the files into releases by the PAR2 indexes among them (found by their
magic): a file whose size and first 16 KiB hash are a PAR2 entry's is that set's and takes the
entry's name; a PAR2 file is its recovery set's; a file between two files of one set, in posting
order, is that set's (an NFO or SFV the PAR2 does not cover), under its yEnc name. A release posted
right after another by the same poster is told apart by its own PAR2. Files of no set stay unplaced.

Part numbers: each file's articles in posting order, the one that fits the last part's size last.
Downloaders place each part by its yEnc ``begin=`` offset, so a swap inside a file costs nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from usenet_indexer.indexing.bodies import MAX_ARTICLES, FirstPart, release_name, safe_name, volume_renames
from usenet_indexer.indexing.fragment import FileFragment, int_array
from usenet_indexer.indexing.runs import is_article_file

LOOKAHEAD = 2  # how far after a file's part 2 or 3 its part 1 is looked for
SIZE_SLACK = 2_048  # bytes two parts of one file may differ by: headers (subject, message-id) differ
# … or this share of a part. yEnc costs a part ~3 % (CRLF every 128 bytes, ~1.6 % of random bytes
# escaped), and that share barely varies between parts of a file (by ~100 bytes in 400 KB).
SIZE_SHARE = 0.01


@dataclass(frozen=True, slots=True)
class Piece:
    """One loose article of a burst."""

    article: int
    size: int  # overview :bytes
    message_id: str
    subject: str


def pieces(files: Sequence[FileFragment]) -> list[Piece]:
    """A burst release's articles (files ``runs.article_file`` made), in posting (article) order."""
    out = [
        Piece(f.articles[0], f.sizes[0], f.message_ids.decode(), f.subject)
        for f in files
        if is_article_file(f)
    ]
    return sorted(out, key=lambda p: (p.article, p.message_id))


def is_burst(files: Sequence[FileFragment]) -> bool:
    """A release joined from loose runs and not split yet: every file one article."""
    return bool(files) and all(is_article_file(f) for f in files)


@dataclass(frozen=True, slots=True)
class Head:
    """A fetched article's yEnc header."""

    name: str
    size: int  # the whole file's
    part: int | None  # None: a single-part post
    total: int | None
    begin: int | None
    end: int | None

    @property
    def parts(self) -> int:
        return self.total or 1

    @property
    def first(self) -> bool:
        return self.part in (None, 1) and self.begin in (None, 1)


def _close(a: float, b: float, ref: float) -> bool:
    return abs(a - b) <= max(SIZE_SLACK, SIZE_SHARE * ref)


def last_size(head: Head, full: int) -> float:
    """The :bytes the last part of ``head``'s file should have, its other parts having ``full``."""
    if head.total is None or head.total <= 1 or head.begin is None or head.end is None:
        return float(full)
    part = head.end - head.begin + 1
    last = head.size - (head.total - 1) * part
    if part <= 0 or not 0 < last <= part:
        return -1.0  # a header that describes no file: nothing fits
    return full * last / part


def arrange(sizes: Sequence[int], head: Head) -> list[int] | None:
    """The order (positions in ``sizes``, the first article's first) in which articles of these
    :bytes can be the parts of ``head``'s file: all but one of the first one's size, and that one the
    size the last part must have, put last. None when they cannot."""
    if len(sizes) != head.parts:
        return None
    if len(sizes) == 1:
        return [0]
    full = sizes[0]
    expected = last_size(head, full)
    # The last part: the last posted where it fits (the posting order is the better evidence where the
    # last part is nearly full), else the one nearest the size it must have.
    fitting = [k for k in range(1, len(sizes)) if _close(sizes[k], expected, expected)]
    if not fitting:
        return None
    last = (
        fitting[-1] if fitting[-1] == len(sizes) - 1 else min(fitting, key=lambda k: abs(sizes[k] - expected))
    )
    rest = [k for k in range(len(sizes)) if k != last]
    if not all(_close(sizes[k], full, full) for k in rest):
        return None
    return [*rest, last]


def fits(sizes: Sequence[int], head: Head) -> bool:
    """Whether articles of these :bytes, in any order, can be the parts of ``head``'s file."""
    return arrange(sizes, head) is not None


@dataclass(frozen=True, slots=True)
class SplitFile:
    """A file of the burst: its pieces' indices in part order, and its first article's header."""

    pieces: tuple[int, ...]
    head: Head


@dataclass
class Walk:
    """The burst ``items`` split into files, one first article fetched at a time (module docstring):
    ``want()`` names the piece to fetch next (None: done), ``give()`` hands over its header (None: not
    yEnc, or not fetched)."""

    items: Sequence[Piece]
    cap: int = MAX_ARTICLES
    files: list[SplitFile] = field(default_factory=list)
    unsure: set[int] = field(default_factory=set)
    repeats: set[int] = field(default_factory=set)
    fetched: int = 0
    _heads: dict[int, Head | None] = field(default_factory=dict)
    _placed: set[int] = field(default_factory=set)
    _request: int | None = None
    # Free pieces near a file given up: one of them may be its part, carried further than its sizes
    # told. A file that takes one must read its header.
    _suspect: set[int] = field(default_factory=set)
    # A revoked file's pieces, each read before the walk goes on: whose it is (``_settle``).
    _pending: set[int] = field(default_factory=set)

    def _free(self, start: int = 0) -> list[int]:
        return [i for i in range(start, len(self.items)) if i not in self._placed]

    def want(self) -> int | None:
        self._advance()
        if self._request is not None:
            return self._request if self.fetched < self.cap else None
        free = self._free()
        if not free or self.fetched >= self.cap:
            return None
        return free[0]

    def give(self, index: int, head: Head | None) -> None:
        self._heads[index] = head
        self.fetched += 1
        if self._request == index:
            self._request = None
        self._advance()

    @property
    def unplaced(self) -> list[int]:
        """Pieces in no file: unsure, or past the cap."""
        return [i for i in range(len(self.items)) if i not in self._placed or i in self.unsure]

    def _advance(self) -> None:
        while self._request is None:
            if self._pending:
                k = min(self._pending)
                if k not in self._heads:
                    self._request = k
                    return
                if self._settle(k):
                    self._pending.discard(k)
                continue
            self._rescue()
            free = self._free()
            if not free:
                # Last, the pieces made unsure by their size alone just after a placed file: one may be
                # its part, carried off, which names it (``_settle``).
                after = {
                    k for f in self.files for k in range(max(f.pieces) + 1, max(f.pieces) + LOOKAHEAD + 2)
                }
                self._pending.update(k for k in self.unsure & after if k not in self._heads)
                if self._pending:
                    continue
                return
            if free[0] not in self._heads:
                return
            i = free[0]
            head = self._heads[i]
            if head is None:
                self._give_up(i)
            elif (held := self._file_of(head)) is not None:
                checked = self._verify(held, head)
                if checked is None:
                    return
                if checked:
                    self._placed.add(i)  # a reposted part of a file already placed
                    self.repeats.add(i)
            elif head.first:
                placed = self._place([i, *free[1:]], head)
                if placed is None:
                    return
                if not placed:
                    self._give_up(i, head)
            elif head.part is not None and 2 <= head.part <= LOOKAHEAD + 1 and len(free) > 1:
                # Part 1 posted a place or two later: the next pieces are read until it comes.
                first = None
                for j in free[1 : 1 + LOOKAHEAD]:
                    if j not in self._heads:
                        self._request = j
                        return
                    other = self._heads[j]
                    if self._ours(other, head) and other is not None and other.first:
                        first = (j, other)
                        break
                if first is None:
                    self._give_up(i)
                    continue
                j, other = first
                placed = self._place([j, *(k for k in free if k != j)], other)
                if placed is None:
                    return
                if not placed:
                    ours = [
                        k for k in free[: LOOKAHEAD + 1] if k != j and self._ours(self._heads.get(k), head)
                    ]
                    self._placed.update(ours)
                    self.unsure.update(ours)
                    self._give_up(j, other, seen=1 + len(ours))
            else:
                self._give_up(i)

    def _place(self, order: list[int], head: Head) -> bool | None:
        """The file of ``head`` from the pieces ``order`` (its first article first), if sizes fit;
        None when a piece's header must be read first (``_request``)."""
        n = head.parts
        if len(order) < n or any(self._ours(self._heads.get(k), head) for k in self.unsure):
            return False  # too few pieces left, or one of its own given up: never whole
        chosen = order[:n]
        if n < 2:
            self._keep(chosen, head)
            return True
        # A piece given up by its size alone, among the file's or just before them (its part 1 carried
        # past its next parts), may be its own: the file is not whole without it. Its header says.
        span = range(min(order[: n + 1]) - 1, max(order[: n + 1]))
        for k in span:
            if k in self.unsure and k not in self._heads:
                self._request = k
                return None
        if any(self._ours(self._heads.get(k), head) for k in self.unsure):
            return False
        arranged = arrange([self.items[k].size for k in chosen], head)
        plain = None if arranged is None else [chosen[k] for k in arranged]
        # The last part posted after the next file's first: the piece after the file fits as the
        # last part, and the one it replaces is the next file's.
        swapped = [*chosen[:-1], order[n]] if len(order) > n else []
        arranged = arrange([self.items[k].size for k in swapped], head) if swapped else None
        swap = None if arranged is None else [swapped[k] for k in arranged]
        # A piece of another file between this one's first and second part (the last of a file before
        # it, posted after this one's first): skipped.
        skipping = [order[0], *order[2 : n + 1]] if len(order) > n else []
        arranged = arrange([self.items[k].size for k in skipping], head) if skipping else None
        skip = None if arranged is None else [skipping[k] for k in arranged]
        # A piece whose header was read for another file is never this one's.
        plain, swap, skip = (
            None
            if c is None or any(k in self._heads and not self._ours(self._heads[k], head) for k in c)
            else c
            for c in (plain, swap, skip)
        )
        # A piece just after the file that could be its last part too (a small file of that size
        # posted around it): sizes alone do not say which.
        expected = last_size(head, self.items[chosen[0]].size)
        rival = any(_close(self.items[k].size, expected, expected) for k in order[n : n + 2])
        full = self.items[chosen[0]].size
        if plain == chosen and swap is None and not rival and _close(expected, full, full):
            # A last part of about a full part's size: sizes do not say where the file ends, headers
            # do: the window's last piece is this file's, the piece after it another's.
            edge = [chosen[-1], *order[n : n + 1]]
            for k in edge:
                if k not in self._heads:
                    self._request = k
                    return None
            inside = self._suspect.intersection(plain[1:-1])
            if (
                self._ours(self._heads[chosen[-1]], head)
                and not any(self._ours(self._heads[k], head) for k in edge[1:])
                and all(self._ours(self._heads.get(k), head) for k in inside)
            ):
                self._keep(plain, head)
                return True
            return False
        if plain == chosen and swap is None and not rival and not self._suspect.intersection(plain):
            self._keep(plain, head)  # in posting order, and nothing else fits: sizes confirm it
            return True
        # Out of posting order, or two ways to fit: headers decide. The piece taken as the last part
        # must say it is, and a piece left out between must say it is another file's (the cost: an
        # article or two for a file in twenty, where posting swapped neighbours).
        options: tuple[tuple[list[int] | None, list[int]], ...] = (
            (plain, []),
            (swap, [chosen[-1]]),
            (skip, [order[1]] if skipping else []),
        )
        for candidate, left_out in options:
            if candidate is None:
                continue
            # Pieces posted after the one taken as last: a swap inside the file, or the next file's
            # first after a part never posted. Their headers say which.
            after = [k for k in candidate[:-1] if self.items[k].article > self.items[candidate[-1]].article]
            after += [k for k in candidate[1:-1] if k in self._suspect and k not in after]
            for k in (candidate[-1], *left_out, *after):
                if k not in self._heads:
                    self._request = k
                    return None
            said = self._heads[candidate[-1]]
            if said is None or (said.name, said.parts, said.part) != (head.name, head.parts, n):
                continue
            if any(self._ours(self._heads[k], head) for k in left_out):
                continue
            if not all(self._ours(self._heads[k], head) for k in after):
                continue
            self._keep(candidate, head)
            return True
        return False

    @staticmethod
    def _ours(said: Head | None, head: Head) -> bool:
        return said is not None and (said.name, said.parts) == (head.name, head.parts)

    def _file_of(self, said: Head | None) -> SplitFile | None:
        return next((f for f in self.files if self._ours(said, f.head)), None)

    def _verify(self, placed: SplitFile, said: Head) -> bool | None:
        """A piece outside ``placed`` says it is a part of it: a second copy of a part it holds (True),
        or one of its own parts carried off, another file's piece having taken its place (the file is
        revoked: False). Its pieces' headers decide, the one at that part's place first; None while one
        must be read (``_request``)."""
        part = said.part or 1
        own = placed.pieces
        for k in own:
            held = self._heads.get(k)
            if held is not None and self._ours(held, placed.head) and (held.part or 1) == part:
                return True
        if any(k in self._heads and not self._ours(self._heads[k], placed.head) for k in own):
            self._revoke(placed)
            return False
        unread = [n for n, k in enumerate(own) if k not in self._heads]
        if unread:
            self._request = own[min(unread, key=lambda n: abs(n - part + 1))]
            return None
        self._revoke(placed)  # every piece its own, none that part: a part held twice, one missing
        return False

    def _revoke(self, placed: SplitFile) -> None:
        """A file found to hold another's piece: unsure, and each of its pieces read, so that a file
        whose piece it held is found out in turn (``_settle``)."""
        self.files.remove(placed)
        self.unsure.update(placed.pieces)
        copies = {k for k in self.repeats if self._ours(self._heads.get(k), placed.head)}
        self.repeats -= copies
        self.unsure |= copies
        self._pending.update(placed.pieces)

    def _rescue(self) -> None:
        """A file given up whose every part has been read among the unsure pieces is placed by their
        headers (each names its file and part), a copy a part, where their sizes fit too."""
        found: dict[tuple[str, int], dict[int, int]] = {}
        for k in sorted(self.unsure):
            said = self._heads.get(k)
            if said is not None:
                found.setdefault((said.name, said.parts), {}).setdefault(said.part or 1, k)
        for (_, parts), at in found.items():
            first = self._heads.get(at.get(1, -1))
            if first is None or not first.first or set(at) != set(range(1, parts + 1)):
                continue
            chosen = [at[p] for p in range(1, parts + 1)]
            if self._file_of(first) is None and fits([self.items[k].size for k in chosen], first):
                self.unsure.difference_update(chosen)
                self.files.append(SplitFile(tuple(chosen), first))

    def _settle(self, k: int) -> bool:
        """A revoked file's piece ``k``, read: a part of a placed file has that file verified
        (``_verify``). Whether that is done (False: a header must be read first)."""
        said = self._heads[k]
        placed = self._file_of(said)
        if said is None or placed is None or k in placed.pieces:
            return True
        return self._verify(placed, said) is not None

    def _keep(self, chosen: list[int], head: Head) -> None:
        self.files.append(SplitFile(tuple(chosen), head))
        self._placed.update(chosen)

    def _give_up(self, i: int, head: Head | None = None, seen: int = 1) -> None:
        """Piece ``i`` unsure, and the rest of its presumed file: the pieces of its sizes its header
        announces less the ``seen`` already marked (a header read says whose a piece is), else up to the
        next shorter piece. Left free, a piece of an unconfirmed file could fill a gap in the next one:
        unsure, it is named by nothing; the free pieces just after them are suspect (``_suspect``)."""
        self._placed.add(i)
        self.unsure.add(i)
        ref = self.items[i].size
        before = set(self.unsure)
        self._mark(i, ref, head, seen)
        reach = max(self.unsure - before, default=i) + LOOKAHEAD + 1
        self._suspect.update(k for k in self._free(i + 1) if k <= reach)

    def _mark(self, i: int, ref: int, head: Head | None, seen: int) -> None:
        if head is not None and head.first and head.parts > 1:
            need = head.parts - seen
            last = last_size(head, ref)
            # Within the file's extent (and swaps' reach): a piece of its size further on is another's.
            limit = i + need + LOOKAHEAD + 1
            for k in self._free(i + 1):
                if need == 0 or k > limit:
                    break
                size = self.items[k].size
                if (k in self._heads and self._ours(self._heads[k], head)) or (
                    k not in self._heads and (_close(size, ref, ref) or _close(size, last, last))
                ):
                    self._placed.add(k)
                    self.unsure.add(k)
                    need -= 1
            return
        for k in self._free(i + 1):
            if k in self._heads:
                break  # fetched already: a first article of its own, perhaps
            self._placed.add(k)
            self.unsure.add(k)
            if self.items[k].size < ref and not _close(self.items[k].size, ref, ref):
                break


@dataclass(frozen=True, slots=True)
class BurstRelease:
    """A release found in a burst: its name, its files and what each is called."""

    name: str
    files: tuple[FileFragment, ...]
    file_total: int  # what its PAR2 describes, and the PAR2 files found
    names: dict[str, str]  # each file's first article (its FirstPart.posted) -> the file's name


def _set_of(part: FirstPart) -> bytes | None:
    """The recovery set of a PAR2 file: its packets', else its first recovery slice's (a volume's first
    article may hold nothing else whole)."""
    if part.par2 is not None and part.par2.recovery_set_ids:
        return part.par2.recovery_set_ids[0]
    return part.volume.recovery_set_id if part.volume is not None else None


def releases(
    items: Sequence[Piece], files: Sequence[SplitFile], parts: Mapping[int, FirstPart]
) -> list[BurstRelease]:
    """The releases among a burst's split ``files`` (``parts[i]``: file i's first article decoded),
    each by its PAR2 (module docstring). Files of no release are left out."""
    indexes: dict[bytes, FirstPart] = {}
    for part in parts.values():
        ident = _set_of(part)
        if ident is not None and part.par2 is not None and part.par2.files:
            held = indexes.get(ident)
            if held is None or held.par2 is None or len(part.par2.files) > len(held.par2.files):
                indexes[ident] = part
    entries: dict[tuple[int, bytes], tuple[bytes, str]] = {}
    ambiguous: set[tuple[int, bytes]] = set()
    for ident, part in sorted(indexes.items()):
        assert part.par2 is not None
        for f in part.par2.files:
            name = safe_name(f.name)
            if name is None:
                continue
            k = (f.size, f.hash_16k)
            if k in entries and entries[k] != (ident, name):
                ambiguous.add(k)
            entries[k] = (ident, name)
    owner: dict[int, bytes] = {}
    named: dict[int, str] = {}
    for i, part in parts.items():
        ident = _set_of(part)
        if ident is not None and ident in indexes:
            owner[i] = ident
            continue
        k = (part.size, part.head_md5 or b"")
        if part.head_md5 is not None and k in entries and k not in ambiguous:
            owner[i], named[i] = entries[k]
    # Files between two of one set (posting order) are that set's: an NFO or SFV no PAR2 covers.
    order = sorted(range(len(files)), key=lambda i: items[files[i].pieces[0]].article)
    for ident in indexes:
        mine = [pos for pos, i in enumerate(order) if owner.get(i) == ident]
        if mine:
            for pos in range(mine[0], mine[-1] + 1):
                owner.setdefault(order[pos], ident)
    out = []
    for ident, index_part in sorted(indexes.items()):
        assert index_part.par2 is not None
        name = release_name([f.name for f in index_part.par2.files])
        if name is None:
            continue
        members = [i for i in order if owner.get(i) == ident]
        par2_files = [i for i in members if _set_of(parts[i]) is not None]
        # The index: a PAR2 file of one part without recovery slices (volumes are larger).
        single = [i for i in par2_files if files[i].head.parts == 1 and parts[i].volume is None]
        smallest = min(single, key=lambda i: (parts[i].size, i), default=None)
        # Volumes by their recovery slices, as par2cmdline names them; where those do not tell,
        # ``.volNN.par2`` (a PAR2 file to downloaders, and no claim of which slices it holds).
        volumes = volume_renames(name, [parts[i] for i in par2_files if i != smallest], index_part.par2)
        volume = 0
        built = []
        names: dict[str, str] = {}
        for i in members:
            if i in named:
                file_name = named[i]
            elif i == smallest:
                file_name = f"{name}.par2"
            elif i in par2_files and parts[i].posted in volumes:
                file_name = volumes[parts[i].posted]
            elif i in par2_files:
                file_name = f"{name}.vol{volume:02d}.par2"
                volume += 1
            else:
                yenc = safe_name(parts[i].yenc_name)
                file_name = yenc if yenc is not None else items[files[i].pieces[0]].message_id
            built.append(_file(items, files[i], file_name))
            names[parts[i].posted] = file_name
        if len({f.name for f in built}) != len(built):
            continue  # two files under one name would merge as one: no release rather than a wrong one
        described = len({(f.size, f.hash_16k) for f in index_part.par2.files})
        out.append(
            BurstRelease(
                name=name,
                files=tuple(sorted(built, key=lambda f: (f.name, f.parts_total))),
                file_total=max(len(built), described + len(par2_files)),
                names=names,
            )
        )
    return out


def split_key(files: Sequence[FileFragment]) -> str:
    """A release found in a burst: keyed by the smallest message-id of its segments, as a joined
    release is (grouping.group_key), so that the same release split from a cross-post's copy in another
    group meets it; prefixed apart from the burst's own key, which the same message-id may make."""
    smallest = min((mid for f in files for mid in f.message_id_list()), default="")
    return hashlib.blake2b(("split\0" + smallest).encode(), digest_size=16).hexdigest()


def _file(items: Sequence[Piece], split: SplitFile, name: str) -> FileFragment:
    chosen = [items[k] for k in split.pieces]
    return FileFragment(
        name=name,
        index=0,
        parts_total=split.head.parts,
        parts=int_array(range(1, len(chosen) + 1)),
        sizes=int_array(p.size for p in chosen),
        articles=int_array(p.article for p in chosen),
        message_ids="\n".join(p.message_id for p in chosen).encode(),
        subject=chosen[0].subject,
    )


__all__ = [
    "BurstRelease",
    "Head",
    "Piece",
    "SplitFile",
    "Walk",
    "arrange",
    "fits",
    "is_burst",
    "last_size",
    "pieces",
    "releases",
    "split_key",
]
