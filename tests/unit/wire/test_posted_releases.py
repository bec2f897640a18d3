"""The batch route's fast path against the full decode (issue 17).

A posted release's files are checked and summed from its segment blob in one C pass, and built only
when something needs them (merge.posted_files, fragment.PackedFiles). Three paths decode and check
the same bodies here: the fast one (the C accelerator, files not built), the full one (the C
accelerator building every file, as before: ``checked_segments``) and the pure-Python one. Whatever
the body — files out of order or repeated, articles outside the lease, probe candidates naming ids
that are not the release's, columns damaged — they must refuse it with the same message, or take the
same batch and make the same catalog rows of it.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.unit.indexing.conftest import needs_native
from tests.unit.indexing.drive import GROUP, scenario, single_run
from usenet_indexer import accelerator
from usenet_indexer.catalog.batch_store import release_row
from usenet_indexer.indexing.fragment import (
    Batch,
    FileFragment,
    FormatError,
    PackedFiles,
    ProbeCandidate,
    ReleaseFragment,
    fragment_from_dict,
    int_array,
)
from usenet_indexer.wire import batch as wire
from usenet_indexer.wire.batch import BatchError, check_authority, decode_batch, encode_batch

# indexing/__init__.py exports the function merge() under the module's name.
merge = importlib.import_module("usenet_indexer.indexing.merge")
PROPS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def indexed(seed: int) -> Batch:
    return single_run(scenario(seed, releases=8))[0]


Outcome = tuple[str, Any]


def route(body: bytes, low: int, high: int) -> Outcome:
    """What the batch route makes of ``body`` before its store: the refusal, or the checked batch and
    each release's catalog row (as a new release: the worker's blob and category)."""
    try:
        posted = decode_batch(body)
        checked = check_authority(posted.batch, group=GROUP, low=low, high=high)
    except BatchError as error:
        return "refused", str(error)
    rows = [
        release_row(fragment, GROUP, blob, category)
        for fragment, blob, category in zip(checked.fragments, posted.blobs, posted.categories, strict=True)
    ]
    return "taken", (checked, rows)


def three_ways(body: bytes, low: int, high: int) -> tuple[Outcome, Outcome, Outcome]:
    """The route on the fast path, the full decode, and the pure path."""
    fast = route(body, low, high)
    with pytest.MonkeyPatch().context() as patch:
        patch.setattr(wire, "posted_files", merge.checked_segments)
        full = route(body, low, high)
    with pytest.MonkeyPatch().context() as patch:
        patch.setattr(accelerator, "speedups", None)
        pure = route(body, low, high)
    return fast, full, pure


def unbuilt(outcome: Outcome) -> bool:
    """Whether every release of a taken batch was checked and made into its row without its files."""
    checked, _rows = outcome[1]
    return all(isinstance(f.files, PackedFiles) and f.files._files is None for f in checked.fragments)


# What a hostile or broken worker may change in one release of an honest batch.
def _reversed(files: tuple[FileFragment, ...]) -> tuple[FileFragment, ...]:
    return tuple(reversed(files))


def _repeated(files: tuple[FileFragment, ...]) -> tuple[FileFragment, ...]:
    return (files[0], *files)


def _moved(files: tuple[FileFragment, ...]) -> tuple[FileFragment, ...]:
    last = files[-1]
    return (*files[:-1], replace(last, articles=int_array(a + 10**6 for a in last.articles)))


def _unsorted_parts(files: tuple[FileFragment, ...]) -> tuple[FileFragment, ...]:
    first = files[0]
    return (replace(first, parts=int_array(reversed(first.parts))), *files[1:])


FILE_CHANGES: dict[str, Callable[[tuple[FileFragment, ...]], tuple[FileFragment, ...]]] = {
    "none": lambda files: files,
    "reversed": _reversed,
    "repeated": _repeated,
    "moved past the lease": _moved,
    "parts out of order": _unsorted_parts,
}


@st.composite
def posted(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """A body of an indexed batch, one release's files perhaps changed, its candidates perhaps naming
    other ids, and a lease that perhaps does not hold all of its articles."""
    batch = indexed(draw(st.integers(0, 3)))
    at = draw(st.integers(0, len(batch.fragments) - 1))
    fragment = batch.fragments[at]
    change = draw(st.sampled_from(["none"] * 4 + sorted(FILE_CHANGES)))  # most bodies honest
    event(f"files: {change}")
    fragments = list(batch.fragments)
    fragments[at] = replace(fragment, files=FILE_CHANGES[change](tuple(fragment.files)))
    ids = [mid for f in fragment.files for mid in f.message_id_list()]
    own = draw(st.sampled_from(ids))
    mid = draw(
        st.sampled_from([own, own[1:], own[:-1], f"{own}\n{ids[0]}", "someone-else@post", own + "é", ""])
    )
    candidates = batch.candidates
    if draw(st.integers(0, 3)) == 0:
        event("a drawn candidate")
        candidates = (ProbeCandidate(fragment.key, fragment.name, mid, None),)
    sent = replace(batch, fragments=tuple(fragments), candidates=candidates)
    low = batch.from_id + draw(st.sampled_from([0, 0, 0, 0, 1, 7]))
    high = max(low, batch.to_id - draw(st.sampled_from([0, 0, 0, 0, 1, 7])))
    return encode_batch(sent, 1, 1), low, high


@needs_native
@PROPS
@given(posted())
def test_the_fast_path_takes_and_refuses_what_the_full_decode_does(case: tuple[bytes, int, int]) -> None:
    body, low, high = case
    fast, full, pure = three_ways(body, low, high)
    event(f"{fast[0]}: {str(fast[1])[:40]}" if fast[0] == "refused" else "taken")
    if fast[0] == "taken":
        assert unbuilt(fast)  # before the comparison below builds them
    assert_agree(fast, full, pure)


def assert_agree(fast: Outcome, full: Outcome, pure: Outcome) -> None:
    """The same outcome on all three paths; the pure path words a refused blob column its own way
    (test_speedups.py compares the two readers): there, only that it is refused."""
    assert fast == full
    if fast[0] == "refused" and "segment blob" in fast[1]:
        assert pure[0] == "refused"
        assert pure[1].split(":")[0] == fast[1].split(":")[0]  # the same release
    else:
        assert fast == pure


@needs_native
@PROPS
@given(posted(), st.data())
def test_damaged_blobs_are_refused_as_the_full_decode_refuses_them(
    case: tuple[bytes, int, int], data: st.DataObject
) -> None:
    """A byte of a release's inflated blob changed (packed again, so that it inflates): the fast path
    refuses it with the full decode's words, or takes what the full decode takes."""
    body, low, high = case
    head, blobs = split_body(body)
    at = data.draw(st.integers(0, len(blobs) - 1))
    raw = bytearray(merge.inflate_segments(blobs[at]))
    raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.sampled_from([0x01, 0x0A, 0x80, 0xFF]))
    blobs[at] = merge.zlib_compress(bytes(raw), 1)
    fast, full, pure = three_ways(join_body(head, blobs), low, high)
    event(fast[0])
    if fast[0] == "taken":
        assert unbuilt(fast)
    assert_agree(fast, full, pure)


def split_body(body: bytes) -> tuple[bytes, list[bytes]]:
    """A body's compressed head and its blobs, as sent."""
    fields = []
    at = 4
    while at < len(body):
        length = int.from_bytes(body[at : at + 4], "little")
        fields.append(body[at + 4 : at + 4 + length])
        at += 4 + length
    return fields[0], fields[1:]


def join_body(head: bytes, blobs: list[bytes]) -> bytes:
    return b"".join([wire.MAGIC, *(len(f).to_bytes(4, "little") + f for f in (head, *blobs))])


@needs_native
def test_a_release_is_built_only_when_something_needs_its_files() -> None:
    """Decoding, checking and the row of a new release leave its files unbuilt; a merge builds them."""
    batch = indexed(0)
    checked = check_authority(decode_batch(encode_batch(batch, 1, 1)).batch, group=GROUP, low=1, high=10**9)
    fragment = checked.fragments[0]
    assert isinstance(fragment.files, PackedFiles)
    assert fragment.segment_count == batch.fragments[0].segment_count
    assert merge.totals(fragment) == merge.totals(batch.fragments[0])
    assert fragment.files._files is None
    assert merge.merge(fragment, fragment).files == batch.fragments[0].files
    assert fragment.files._files is not None


def field_by_field(d: dict[str, Any], files: tuple[FileFragment, ...]) -> ReleaseFragment:
    """fragment_from_dict's fields as it read them before its one-test fast path: each field checked
    on its own, in this order (the reference its refusals must match)."""
    from usenet_indexer.indexing.fragment import _int, _opt_int, _str

    first_article = _int(d["first_article"], "f.first_article")
    last_article = _int(d["last_article"], "f.last_article")
    if last_article < first_article:
        raise FormatError(f"f: last_article {last_article} is before first_article {first_article}")
    if not isinstance(d["obfuscated"], bool):
        raise FormatError("f.obfuscated: expected true or false")
    request = d["request_id"]
    return ReleaseFragment(
        key=_str(d["key"], "f.key", limit=128, empty=False),
        name=_str(d["name"], "f.name"),
        poster=_str(d["poster"], "f.poster"),
        groups=tuple(d["groups"]),
        file_total=_int(d["file_total"], "f.file_total"),
        first_article=first_article,
        first_date=_opt_int(d["first_date"], "f.first_date"),
        last_article=last_article,
        last_date=_opt_int(d["last_date"], "f.last_date"),
        obfuscated=d["obfuscated"],
        request_id=None if request is None else _str(request, "f.request_id", limit=64),
        files=files,
        collection=_str(d["collection"], "f.collection"),
    )


_NUMBERS = {"file_total", "first_article", "first_date", "last_article", "last_date"}
_TEXTS = {"key", "name", "poster", "request_id", "collection"}
_NUMBER = [0, 1, 7, 2**63 - 1, 2**63, -1, True, False, 1.5, "3", None]
_TEXT = ["", "a", "x" * 64, "x" * 65, "x" * 128, "x" * 129, "x" * 8192, "x" * 8193, 5, None]


@st.composite
def fragment_heads(draw: st.DrawFn) -> dict[str, Any]:
    """A fragment's head (its fields but files), every field usual, then up to two of them drawn from
    values near and past each limit, of other types, or None."""
    head: dict[str, Any] = {
        "key": "k" * 32,
        "name": "Some.Name",
        "poster": "p@x",
        "groups": ["alt.binaries.test"],
        "file_total": 3,
        "first_article": 5,
        "first_date": 100,
        "last_article": 9,
        "last_date": None,
        "obfuscated": False,
        "request_id": None,
        "collection": "Some Name",
    }
    for field in draw(st.lists(st.sampled_from(sorted(_NUMBERS | _TEXTS | {"obfuscated"})), max_size=2)):
        values = _NUMBER if field in _NUMBERS else _TEXT if field in _TEXTS else [True, 0, 1, None]
        head[field] = draw(st.sampled_from(values))
    return head


@settings(max_examples=600, deadline=None)  # cheap; each field meets each limit's both sides
@given(fragment_heads())
def test_a_fragment_head_is_read_as_field_by_field(d: dict[str, Any]) -> None:
    """fragment_from_dict's fast path (one test of every field's usual type and range) takes and
    refuses exactly what the fields checked one by one take and refuse, with the same message."""
    outcomes: list[ReleaseFragment | str] = []
    reads: tuple[Callable[[], ReleaseFragment], ...] = (
        lambda: fragment_from_dict(d, "f", files=()),
        lambda: field_by_field(d, ()),
    )
    for read in reads:
        try:
            outcomes.append(read())
        except FormatError as error:
            outcomes.append(str(error))
    event("refused" if isinstance(outcomes[0], str) else "taken")
    assert outcomes[0] == outcomes[1]
