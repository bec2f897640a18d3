"""What every harness under fuzz/ shares: seeds, a gzip-aware mutator, and atheris's start.

Each harness is a script (``python fuzz/NAME.py [libFuzzer flags] [CORPUS_DIR ...]``) whose ``one(data)``
feeds the fuzzer's bytes to one hostile-input parser and raises only when the parser breaks its
contract (an exception other than its own error, or a result that contradicts itself). Each starts
from seeds of its own (valid inputs), so a short run already reaches past the first bytes a parser
checks.
"""

from __future__ import annotations

import hashlib
import sys
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import atheris  # type: ignore[import-untyped]

REPO = Path(__file__).resolve().parents[1]
if str(REPO / "src") not in sys.path:
    sys.path.insert(0, str(REPO / "src"))

# Inflate at most this much of a gzip input to mutate what is inside (libFuzzer's inputs are 4 KB by
# default: a seed that inflates past this is mutated as it stands).
MUTATE_INFLATED_MAX = 1 << 20


def gzip_bytes(data: bytes) -> bytes:
    """gzip framing, mtime 0: the same data gives the same bytes (as the batch and snapshot writers)."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, 31)
    return deflate.compress(data) + deflate.flush()


def gzip_aware_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """Mutate what a gzip input holds and compress it again, most of the time; otherwise (and for
    inputs that are not gzip) the bytes as they stand. Random bytes almost never survive gzip's CRC,
    so without this the fuzzer would explore the gzip layer and never the parser behind it."""
    if data[:2] == b"\x1f\x8b" and seed % 4:
        inflater = zlib.decompressobj(wbits=31)
        try:
            inner = inflater.decompress(data, MUTATE_INFLATED_MAX)
        except zlib.error:
            inner = None
        if inner is not None and inflater.eof:
            mutated = gzip_bytes(atheris.Mutate(inner, max(len(inner) * 2, 64)))
            if len(mutated) <= max_size:  # libFuzzer refuses anything longer
                return mutated
    out: bytes = atheris.Mutate(data, max_size)
    return out


def main(
    one: Callable[[bytes], None],
    seeds: Iterable[bytes] = (),
    *,
    mutator: Callable[[bytes, int, int], bytes] | None = None,
) -> None:
    """Run ``one`` under atheris with sys.argv as libFuzzer's flags and corpus directories.

    The seeds are written into the first corpus directory given, or into fuzz/.corpus/NAME (ignored by
    git) when none is: libFuzzer adds what it finds to that directory, so a later run starts from it.
    """
    args = list(sys.argv)
    folders = [a for a in args[1:] if not a.startswith("-")]
    if not folders:
        folders = [str(Path(__file__).parent / ".corpus" / Path(args[0]).stem)]
        args.append(folders[0])
    corpus = Path(folders[0])
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        # Named by content, as libFuzzer names what it adds: running again does not duplicate them.
        (corpus / f"seed-{hashlib.sha1(seed).hexdigest()}").write_bytes(seed)
    options = {"custom_mutator": mutator} if mutator is not None else {}
    atheris.Setup(args, one, **options)
    atheris.Fuzz()  # never returns: libFuzzer exits the process
