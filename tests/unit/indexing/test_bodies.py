"""Names from bodies (issue 16): PAR2 entries matched by size and 16 KiB hash, yEnc names where they are
real, nothing where the evidence does not fit one file; and what a probe fetches."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.rar import Member, rar5
from usenet_indexer.indexing.bodies import (
    MAX_ARTICLES,
    FirstPart,
    apply_renames,
    fetch_plan,
    first_part,
    member_renames,
    name_files,
    par2_index,
    password,
    safe_name,
    set_base,
    set_renames,
)
from usenet_indexer.indexing.fragment import FileFragment, int_array
from usenet_indexer.indexing.par2 import read_par2
from usenet_indexer.indexing.par2_writer import Par2Input
from usenet_indexer.indexing.par2_writer import par2_index as write_par2

REAL = "Glass.Garden.2021.1080p.BluRay.x264-FLUX"


def payloads(n: int, seed: int = 1) -> dict[str, bytes]:
    rng = random.Random(seed)
    return {f"{REAL}.part{k:02d}.rar": rng.randbytes(40_000 + k) for k in range(1, n + 1)}


def hexname(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


def part_of(posted: str, data: bytes, yenc_name: str | None = None, first: int = 30_000) -> FirstPart:
    return first_part(posted, data[:first], yenc_name or posted, len(data), 1)


def test_par2_entries_name_files_by_size_and_16k_hash() -> None:
    files = payloads(4)
    index = write_par2([Par2Input(n, d) for n, d in files.items()])
    rng = random.Random(2)
    posted = {hexname(rng): (n, d) for n, d in files.items()}
    parts = [part_of(p, d) for p, (_, d) in posted.items()]
    par2_posted = hexname(rng)
    parts.append(first_part(par2_posted, index, par2_posted, len(index), 1))
    found = name_files(parts, par2_index(parts))
    assert found.name == REAL
    assert found.source == "par2"
    assert found.renames == {p: n for p, (n, _) in posted.items()} | {par2_posted: f"{REAL}.par2"}


def test_a_random_yenc_name_without_a_par2_match_keeps_its_file() -> None:
    files = payloads(2)
    index = write_par2([Par2Input(n, d) for n, d in files.items()])
    rng = random.Random(3)
    stranger = rng.randbytes(50_000)  # a file the PAR2 does not describe
    posted = hexname(rng)
    parts = [part_of(posted, stranger, yenc_name=hexname(rng))]
    found = name_files(parts, read_par2(index))
    assert found.renames == {}
    assert found.name == REAL  # the PAR2 still names the release


def test_the_same_size_with_another_hash_is_no_match() -> None:
    files = payloads(1)
    index = write_par2([Par2Input(n, d) for n, d in files.items()])
    (data,) = files.values()
    other = bytes(len(data))  # same size, other bytes
    parts = [part_of("abc", other, yenc_name=hexname(random.Random(4)))]
    assert name_files(parts, read_par2(index)).renames == {}


def test_real_yenc_names_name_files_and_release_without_a_par2() -> None:
    files = payloads(3)
    rng = random.Random(5)
    parts = [part_of(hexname(rng), d, yenc_name=n) for n, d in files.items()]
    found = name_files(parts, None)
    assert found.name == REAL
    assert found.source == "yenc"
    assert sorted(found.renames.values()) == sorted(files)


def test_random_bodies_name_nothing() -> None:
    rng = random.Random(6)
    parts = [part_of(hexname(rng), rng.randbytes(20_000), yenc_name=hexname(rng)) for _ in range(3)]
    found = name_files(parts, None)
    assert (found.name, found.renames) == (None, {})


def test_a_hash_is_taken_only_from_a_first_part_that_holds_16k() -> None:
    data = random.Random(7).randbytes(40_000)
    assert first_part("x", data[:20_000], "x", len(data), 1).head_md5 == hashlib.md5(data[:16_384]).digest()
    assert first_part("x", data[:10_000], "x", len(data), 1).head_md5 is None  # short
    assert first_part("x", data[:20_000], "x", len(data), 5_001).head_md5 is None  # not the file's start
    small = data[:1_000]
    assert first_part("x", small, "x", len(small), None).head_md5 == hashlib.md5(small).digest()


def test_two_files_never_end_under_one_name() -> None:
    files = [
        FileFragment(n, 0, 1, int_array([1]), int_array([10]), int_array([k]), f"m{k}".encode())
        for k, n in enumerate("abc")
    ]
    held, renamed = apply_renames(files, {"a": "same.rar", "b": "same.rar", "c": "b"})
    assert held == {}  # a and b collide; c would take b's name, which b keeps
    assert [f.name for f in renamed] == ["a", "b", "c"]
    held, renamed = apply_renames(files, {"a": "x.rar"})
    assert held == {"a": "x.rar"} and [f.name for f in renamed] == ["b", "c", "x.rar"]


def test_unsafe_names_are_refused() -> None:
    assert safe_name("dir/sub/file.mkv") == "file.mkv"
    assert safe_name("..") is None
    assert safe_name("a\x00b.rar") is None
    assert safe_name("x" * 300) is None


def fragment(name: str, parts: int, size: int, mid: str) -> FileFragment:
    return FileFragment(
        name,
        0,
        parts,
        int_array(range(1, parts + 1)),
        int_array([size] * parts),
        int_array(range(parts)),
        "\n".join(f"{mid}.{p}" for p in range(1, parts + 1)).encode(),
    )


def test_the_plan_tries_small_files_for_the_par2_then_the_random_names_within_the_cap() -> None:
    rng = random.Random(8)
    files = [fragment(hexname(rng), 40, 700_000, f"big{k}") for k in range(50)]
    files.append(fragment(hexname(rng), 1, 20_000, "small"))
    plan = fetch_plan(files)
    assert plan.par2[0] == (files[-1].name, "small.1")  # the smallest file first
    assert len(plan.par2) + len(plan.others) == MAX_ARTICLES
    assert not {n for n, _ in plan.par2} & {n for n, _ in plan.others}
    named = [fragment(f"{REAL}.part{k:02d}.rar", 40, 700_000, f"rar{k}") for k in range(3)]
    named.append(fragment(f"{REAL}.par2", 1, 10_000, "idx"))
    plan = fetch_plan(named, "idx.1")
    assert plan.par2 == ((f"{REAL}.par2", "idx.1"),)
    assert plan.others == ()  # names that say what they are: no article fetched for them


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(max_size=40),
            st.text(max_size=40),
            st.integers(0, 10**9),
            st.one_of(st.none(), st.binary(min_size=16, max_size=16)),
        ),
        max_size=12,
    )
)
def test_hostile_first_parts_never_raise_nor_give_unsafe_or_shared_names(
    raw: list[tuple[str, str, int, bytes | None]],
) -> None:
    parts = [FirstPart(posted, yenc, size, md5, None) for posted, yenc, size, md5 in raw]
    found = name_files(parts, None)
    for new in found.renames.values():
        assert safe_name(new) == new
    files = [fragment(p.posted, 1, 1, f"m{i}") for i, p in enumerate(parts)]
    unique = {f.name: f for f in files}
    _held, renamed = apply_renames(list(unique.values()), found.renames)
    names = [f.name for f in renamed]
    assert len(names) == len(set(names))


def test_per_file_random_names_with_extensions_are_fetched_set_members_are_not() -> None:
    rng = random.Random(9)
    each = [fragment(f"{hexname(rng)}.rar", 10, 700_000, f"r{k}") for k in range(4)]
    plan = fetch_plan(each)
    assert len(plan.par2) + len(plan.others) == 4  # every file: a random name of its own
    base = hexname(rng)
    members = [fragment(f"{base}.part{k:02d}.rar", 10, 700_000, f"m{k}") for k in range(1, 5)]
    members.append(fragment(f"{base}.par2", 1, 9_000, "p"))
    plan = fetch_plan(members)
    assert plan.others == ()


def test_the_members_of_one_obfuscated_set_take_their_real_names_by_suffix() -> None:
    # bench/obfuscation.py: PAR2-obfuscated sets were named, but their NZBs kept the hex names (files
    # right 0 %): their first articles are not fetched, their suffixes say which PAR2 entry each is.
    real = "Quiet.Harbor.2023.1080p.BluRay.x264-GRP"
    par2 = [f"{real}.part{k:02d}.rar" for k in range(1, 4)]
    posted = [
        "fe4cf18d550791a496480fbaf1c6aa3b.part01.rar",
        "fe4cf18d550791a496480fbaf1c6aa3b.part02.rar",
        "fe4cf18d550791a496480fbaf1c6aa3b.PART03.RAR",
        "fe4cf18d550791a496480fbaf1c6aa3b.par2",
        "fe4cf18d550791a496480fbaf1c6aa3b.vol0+1.par2",
    ]
    renames = set_renames(posted, par2, real)
    assert renames == {
        "fe4cf18d550791a496480fbaf1c6aa3b.part01.rar": f"{real}.part01.rar",
        "fe4cf18d550791a496480fbaf1c6aa3b.part02.rar": f"{real}.part02.rar",
        "fe4cf18d550791a496480fbaf1c6aa3b.PART03.RAR": f"{real}.part03.rar",
        "fe4cf18d550791a496480fbaf1c6aa3b.par2": f"{real}.par2",
        "fe4cf18d550791a496480fbaf1c6aa3b.vol0+1.par2": f"{real}.vol0+1.par2",
    }
    # Two random bases: which set is which cannot be told by suffixes.
    assert set_renames([*posted, "812813ce0a1b2c3d4e5f60718293a4b5.part01.rar"], par2, real) == {}
    # No member whose suffix the PAR2 names: nothing ties the random base to the release (never a guess).
    assert set_renames(["fe4cf18d550791a496480fbaf1c6aa3b.part09.rar"], par2, real) == {}


def test_the_password_is_read_from_the_first_volume() -> None:
    def part(posted: str, data: bytes) -> FirstPart:
        return first_part(posted, data, posted, len(data), 1)

    locked = rar5([Member("a.mkv", b"x" * 5000, encrypted=True)])[0]
    plain = rar5([Member("a.mkv", b"x" * 5000)])[0]
    names = {"h1.rar": "A.part01.rar", "h2.rar": "A.part02.rar"}
    assert password([part("h1.rar", locked)], names) == (True, None)
    assert password([part("h1.rar", plain)], names) == (False, None)
    assert password([part("h2.rar", locked)], names) == (None, "h1.rar")  # the first volume: to fetch
    assert password([part("h1.rar", b"random bytes")], names) == (None, None)  # no archive: not known
    assert password([], {"a.mkv": "a.mkv"}) == (None, None)  # no archive at all


@given(st.lists(st.booleans(), min_size=6, max_size=6), st.integers(0, 5))
def test_a_set_is_renamed_alike_whether_its_members_come_before_or_after_the_probe(
    early: list[bool], named: int
) -> None:
    # test_run: a resumed run's catalog differed from an uninterrupted one's: members stored after the
    # probe kept their random names. The batch store renames them by the base the probe established.
    real = "Quiet.Harbor.2023.1080p.BluRay.x264-GRP"
    base = "fe4cf18d550791a496480fbaf1c6aa3b"
    suffixes = [".part01.rar", ".part02.rar", ".part03.rar", ".par2", ".vol0+1.par2", ".nfo"]
    posted = [base + suffix for suffix in suffixes]
    par2 = [f"{real}{suffix}" for suffix in suffixes[:3]]
    early[named % 3] = True  # the probe saw at least one member the PAR2 names
    before = [n for n, seen in zip(posted, early, strict=True) if seen]
    after = [n for n, seen in zip(posted, early, strict=True) if not seen]
    probed = set_renames(before, par2, real)
    established = set_base(probed)
    assert established == (base, real)
    later = member_renames(after, *established)
    assert {**probed, **later} == set_renames(posted, par2, real)
    assert set_renames(posted, par2, real) == {n: f"{real}{n[len(base) :]}" for n in posted}


def test_the_index_file_read_ties_its_set_to_the_release_before_the_rest_is_stored() -> None:
    # test_obfuscated_roundtrip, once in three: the probe ran when only the PAR2 index was stored, no
    # member's suffix was a PAR2 name, and the rar volumes stored later kept their random names.
    real = "Glass.Garden.2019.1080p.BluRay.x264-FLUX"
    base = "fe4cf18d550791a496480fbaf1c6aa3b"
    par2 = [f"{real}.part01.rar", f"{real}.part02.rar"]
    assert set_renames([f"{base}.vol0+1.par2"], par2, real) == {}  # nothing ties them
    probed = set_renames([f"{base}.vol0+1.par2"], par2, real, index_file=f"{base}.par2")
    assert probed == {f"{base}.vol0+1.par2": f"{real}.vol0+1.par2"}
    assert set_base({f"{base}.par2": f"{real}.par2"}) == (base, real)
    assert set_renames([f"{base}.part01.rar"], par2, real, index_file="other.par2") == {
        f"{base}.part01.rar": f"{real}.part01.rar"  # its own suffix is a PAR2 name
    }
