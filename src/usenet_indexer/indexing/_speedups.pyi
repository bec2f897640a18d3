"""Types of the C accelerator (_speedups.c); the Python twins are in indexer.py and overview.py."""

from collections.abc import Callable

MAX_FIELDS: int

def scan(
    chunk: bytes,
    accs: dict[bytes, object],
    slow: Callable[[list[bytes], int], None],
    lo: int,
    hi: int,
    fields: tuple[int, int, int, int, int, int],
    /,
) -> tuple[int, int]: ...
def chunk_is_clean(chunk: bytes, /) -> bool: ...
