"""The optional C accelerator, or None: one place decides which path runs for every caller.

``_speedups`` (``_speedups.c``) holds native twins of the hot paths: the indexer's fast loop over a
clean chunk and the building of a file's columns at take(), a new file's subject read by the rules
(indexing/rules.py, printable-ASCII subjects), the segment blob's writing and reading
(indexing/merge.py), and the NNTP reader's line scan (nntp/_readers.py). A module of its own, below
both indexing and nntp, so that neither imports the other for it (tests/unit/test_layering.py): it
imports nothing of the package, and the C code is given the fragment type it builds (``file_type``).

It is compiled by the build hook (hatch_build.py) when a C compiler and the Python headers are
there; when it is not, or when ``USENET_INDEXER_PURE=1`` is set, the pure-Python code runs instead.
Both give the same batches (tests/unit/indexing compare them); the native one indexes about 2.4 times
as fast (bench/index.py: 0.57-0.60 of the floor's rate against 0.24).

Like httpx's ``_decoders``, the import is tried once here and everything else asks this module.
``PATH`` says which path is in use and ``REASON`` why; the edge worker logs both when it starts.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

# indexing.fragment.FileFragment: its fields are read and set by name (_speedups.c, file_field_names)
_File = TypeVar("_File")
# indexing.rules.SubjectMatch: a NamedTuple the C code builds as tuple.__new__ does
_Match = TypeVar("_Match", bound=tuple[Any, ...])

PURE_ENV = "USENET_INDEXER_PURE"


class Speedups(Protocol):
    """What the indexer uses of the extension (its stub: _speedups.pyi); mypy checks the module fits."""

    MAX_FIELDS: int

    def scan(
        self,
        chunk: bytes,
        accs: dict[bytes, Any],
        slow: Callable[[list[bytes], int], tuple[Any, int, int] | None],
        lo: int,
        hi: int,
        fields: tuple[int, int, int, int, int, int],
        /,
    ) -> tuple[int, int]: ...

    def columns(
        self, segs: bytearray | bytes | array[int], mids: bytearray | bytes, parts_total: int, /
    ) -> tuple[array[int], array[int], array[int], bytes] | None: ...

    def file_fragment(
        self,
        segs: bytearray | bytes | array[int],
        mids: bytearray | bytes,
        parts_total: int,
        name: str,
        index: int,
        subject: bytes,
        file_type: type[_File],
        /,
    ) -> _File | None: ...

    def chunk_is_clean(self, chunk: bytes, /) -> bool: ...

    def line_scan(self, data: bytes | bytearray | memoryview, /) -> tuple[int, int]: ...

    def parse_date(self, raw: bytes, /) -> int | Literal[False]: ...

    def segment_blob(self, files: Sequence[Any], /) -> bytes: ...

    def segment_files(
        self, data: bytes, max_text: int, max_id: int, file_type: type[_File], /
    ) -> list[_File]: ...

    def segment_summary(
        self, data: bytes, max_text: int, max_id: int, /
    ) -> tuple[int, int, int, int, tuple[int, int] | None, bool]: ...

    def segment_has_id(self, data: bytes, message_id: bytes, /) -> bool: ...

    def column_range(self, column: array[int], /) -> tuple[int, int]: ...

    def subject_tables(
        self,
        extensions: dict[str, Any],
        member_extensions: frozenset[str],
        set_members: frozenset[Any],
        kinds: tuple[Any, ...],
        titles: dict[str, str | None],
        cached_title: Callable[[str], str | None],
        trailer: str,
        edges: str,
        tail: int,
        names: tuple[str, ...],
        /,
    ) -> None: ...

    def subject_reading(
        self,
        rule: str,
        slots: tuple[int, ...],
        subject: str,
        match: re.Match[str],
        match_type: type[_Match],
        /,
    ) -> _Match | Literal[False] | None: ...

    def default_match(self, subject: str, match_type: type[_Match], /) -> _Match | Literal[False] | None: ...


if TYPE_CHECKING:  # the extension's stub must give what the protocol asks
    from usenet_indexer.accelerator import _speedups as _stub

    _fits: Speedups = _stub


def _load() -> tuple[Speedups | None, str]:
    if os.environ.get(PURE_ENV, "").strip() not in ("", "0"):
        return None, f"{PURE_ENV} is set"
    try:
        _speedups: Speedups = importlib.import_module("usenet_indexer.accelerator._speedups")
    except ImportError as error:
        return None, (
            f"the C extension is not built ({error}); `uv sync --reinstall-package usenet-indexer` "
            "builds it where a C compiler and the Python headers are installed"
        )
    return _speedups, "the C extension _speedups is built"


speedups, REASON = _load()
PATH = "native" if speedups is not None else "pure"

logging.getLogger(__name__).debug("indexing: %s path (%s)", PATH, REASON)

__all__ = ["PATH", "PURE_ENV", "REASON", "Speedups", "speedups"]
