"""Types of the C accelerator (_speedups.c); the Python twins are in indexer.py and overview.py."""

from array import array
from collections.abc import Callable, Sequence
from re import Match
from typing import Any, Literal, TypeVar

_Match = TypeVar("_Match", bound=tuple[Any, ...])  # indexing.rules.SubjectMatch
_File = TypeVar("_File")  # indexing.fragment.FileFragment, whose fields the C code reads and sets by name

MAX_FIELDS: int

def scan(
    chunk: bytes,
    accs: dict[bytes, Any],
    slow: Callable[[list[bytes], int], tuple[Any, int, int] | None],
    lo: int,
    hi: int,
    fields: tuple[int, int, int, int, int, int],
    /,
) -> tuple[int, int]: ...
def chunk_is_clean(chunk: bytes, /) -> bool: ...
def line_scan(data: bytes | bytearray | memoryview, /) -> tuple[int, int]: ...
def parse_date(raw: bytes, /) -> int | Literal[False]: ...
def segment_blob(files: Sequence[Any], /) -> bytes: ...
def columns(
    segs: bytearray | bytes | array[int], mids: bytearray | bytes, parts_total: int, /
) -> tuple[array[int], array[int], array[int], bytes] | None: ...
def file_fragment(
    segs: bytearray | bytes | array[int],
    mids: bytearray | bytes,
    parts_total: int,
    name: str,
    index: int,
    subject: bytes,
    file_type: type[_File],
    /,
) -> _File | None: ...
def segment_files(data: bytes, max_text: int, max_id: int, file_type: type[_File], /) -> list[_File]: ...
def segment_summary(
    data: bytes, max_text: int, max_id: int, /
) -> tuple[int, int, int, int, tuple[int, int] | None, bool]: ...
def segment_has_id(data: bytes, message_id: bytes, /) -> bool: ...
def column_range(column: array[int], /) -> tuple[int, int]: ...
def subject_tables(
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
    rule: str, slots: tuple[int, ...], subject: str, match: Match[str], match_type: type[_Match], /
) -> _Match | Literal[False] | None: ...
def default_match(subject: str, match_type: type[_Match], /) -> _Match | Literal[False] | None: ...
