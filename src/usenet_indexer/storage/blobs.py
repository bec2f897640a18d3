"""Where spool, corpus and snapshots keep their bytes: a key–value store of immutable blobs.

One interface, so that a deployment with several coordinators can put all three in object storage
(the corpus of a large indexer is terabytes; storage/s3.py) while one machine keeps them in its data
directory (``LocalBlobStore`` here). Keys are ``/``-separated names built by the callers from validated
integers and group names only; ``check_key`` refuses anything else before it can touch a filesystem
or a bucket.

Errors: ``BlobTooLarge`` past a writer's cap; any other ``BlobError`` is storage that failed (an
object store that did not answer, a blob removed while read). A full local disk stays the ``OSError``
(ENOSPC) it is: the prefetcher pauses on it (coordinator/loops/fetching.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

_KEY_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+_.\-]{0,199}$")


class BlobError(Exception):
    pass


class BlobTooLarge(BlobError):
    """More bytes than the writer's ``max_bytes``; nothing was stored."""


def check_key(key: str) -> str:
    parts = key.split("/")
    if not parts or any(not _KEY_PART.match(p) or p in (".", "..") or ".." in p for p in parts):
        raise BlobError(f"not a storage key: {key!r}")
    return key


class BlobWriter(Protocol):
    """A blob being written piece by piece (a body streamed in); nothing is visible until commit."""

    def write(self, piece: bytes) -> None:
        """Append; past the writer's cap raises BlobTooLarge (having aborted)."""

    def commit(self) -> int:
        """Make the blob visible at once; returns its size."""

    def abort(self) -> None:
        """Forget everything written."""


class BlobStore(Protocol):
    def check(self) -> None:
        """Fail now, with what to do, when the store cannot be used (``serve`` calls it at start)."""

    def writer(self, key: str, *, max_bytes: int) -> BlobWriter:
        """A writer for ``key``; see BlobWriter."""

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` atomically: a reader sees all of it or nothing."""
        self.put_stream(key, [data], max_bytes=len(data))

    def put_stream(self, key: str, pieces: Iterable[bytes], *, max_bytes: int) -> int:
        """Store the concatenated pieces atomically; more than ``max_bytes`` raises BlobTooLarge and
        leaves nothing behind. Returns the size. (Both stores inherit these two: their writers differ.)"""
        writer = self.writer(key, max_bytes=max_bytes)
        try:
            for piece in pieces:
                writer.write(piece)
        except BaseException:
            writer.abort()
            raise
        return writer.commit()

    def get(self, key: str) -> bytes | None:
        """The blob, or None when there is none."""

    def open(self, key: str, piece_size: int = 1 << 20) -> tuple[int, Iterator[bytes]] | None:
        """The blob's size and its bytes in pieces, or None."""

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None:
        """Remove the blob if it is there."""

    def delete_prefix(self, prefix: str) -> None:
        """Remove every blob under ``prefix/``."""

    def list(self, prefix: str) -> list[str]:
        """Keys directly or indirectly under ``prefix/``, sorted."""

    def size(self, prefix: str) -> int:
        """Total bytes under ``prefix/``."""

    def sweep_temporary(self, prefix: str, older_than_seconds: float) -> int:
        """Remove what writers left half-written under ``prefix/`` (a crash between write and commit:
        temporary files, unfinished multipart uploads) longer ago than ``older_than_seconds``; returns
        how many. Never touches a committed blob."""


class LocalFileWriter:
    """A temporary file beside the blob, renamed into place on commit (atomic on one filesystem)."""

    def __init__(self, key: str, path: Path, max_bytes: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        self.key, self.path, self.temp, self.max_bytes = key, path, Path(temp), max_bytes
        self.out = os.fdopen(fd, "wb")
        self.size = 0

    def write(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size > self.max_bytes:
            self.abort()
            raise BlobTooLarge(f"{self.key}: more than {self.max_bytes} bytes")
        self.out.write(piece)

    def commit(self) -> int:
        try:
            self.out.flush()
            os.fsync(self.out.fileno())
            self.out.close()
            os.replace(self.temp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.size

    def abort(self) -> None:
        # On a full disk closing fails too (it flushes what is buffered first, and that is what did not
        # fit): the temporary file must go all the same, or every ENOSPC leaves one behind.
        try:
            if not self.out.closed:
                self.out.close()
        except OSError:
            pass
        finally:
            self.temp.unlink(missing_ok=True)


class LocalBlobStore(BlobStore):
    """Blobs as files under ``root``, written to a temporary file and renamed into place."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"LocalBlobStore({str(self.root)!r})"

    def check(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(prefix=".tmp-check-", dir=self.root):
                pass
        except OSError as error:
            raise BlobError(
                f"cannot write under {self.root} ({error.strerror}): give the coordinator's user a "
                "writable data_dir, or set storage_url"
            ) from error

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def writer(self, key: str, *, max_bytes: int) -> LocalFileWriter:
        return LocalFileWriter(key, self._path(key), max_bytes)

    def get(self, key: str) -> bytes | None:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            return None

    def open(self, key: str, piece_size: int = 1 << 20) -> tuple[int, Iterator[bytes]] | None:
        path = self._path(key)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return None

        def pieces() -> Iterator[bytes]:
            # Opened when read, not when asked for: a caller that only wanted the size leaks nothing.
            try:
                handle = path.open("rb")
            except FileNotFoundError:
                raise BlobError(f"{key} was removed while being read") from None
            with handle:
                while piece := handle.read(piece_size):
                    yield piece

        return size, pieces()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(self._path(prefix), ignore_errors=True)

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        if not base.is_dir():
            return []
        return sorted(
            f"{prefix}/{p.relative_to(base).as_posix()}"
            for p in base.rglob("*")
            if p.is_file() and not p.name.startswith(".tmp-")
        )

    def size(self, prefix: str) -> int:
        base = self._path(prefix)
        if not base.is_dir():
            return 0
        total = 0
        for p in base.rglob("*"):
            # A file renamed or removed while we walk (the spool changes all the time) counts as gone.
            with contextlib.suppress(FileNotFoundError):
                if p.is_file():
                    total += p.stat().st_size
        return total

    def sweep_temporary(self, prefix: str, older_than_seconds: float) -> int:
        base = self._path(prefix)
        if not base.is_dir():
            return 0
        cutoff = time.time() - older_than_seconds
        removed = 0
        for p in base.rglob(".tmp-*"):
            with contextlib.suppress(FileNotFoundError):
                if p.is_file() and p.stat().st_mtime < cutoff:
                    p.unlink()
                    removed += 1
        return removed
