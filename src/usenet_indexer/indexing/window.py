"""The window of a group lane (seed 002, "window indexing"): releases still open, carried across ranges.

A worker holding a group's lane takes its ranges in article order. Instead of posting every release it
saw as a fragment at each batch (and having the coordinator merge the same release again and again),
it keeps open releases here and posts a release once it is complete, or once the lane has read
``horizon`` articles past its last one (its poster is done with it; reposts later merge by key as usual).

The window's state is serialized as a gzip snapshot standing at article N (``position``) and PUT to the
coordinator; the lane's next holder restores it and resumes at N. Restoring is exact, and absorbing is a
pure function of the state and the batch, so a takeover from a snapshot ends in exactly the state of a
run that was never interrupted (tests/unit/indexing check it at random points).

Contract with the worker: snapshot after absorbing the batch that ends at N-1, and store it no later
than that batch, so that the snapshot and the range's resume point agree.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

from usenet_indexer.compression import InflateError, inflate_whole
from usenet_indexer.indexing.fragment import (
    Batch,
    FormatError,
    ReleaseFragment,
    fragment_from_dict,
    fragment_to_dict,
)
from usenet_indexer.indexing.merge import is_complete, merge

DEFAULT_HORIZON = 2_000_000  # articles; a poster's release spans far fewer, even in the busiest groups
# 2: releases carry their collection (issue 15); a version 1 snapshot is refused and a new window begins.
SNAPSHOT_VERSION = 2
MAX_SNAPSHOT_INFLATED = 1024 * 1024 * 1024


class WindowError(ValueError):
    """A snapshot that cannot be restored, or batches out of order; the message says which."""


class Window:
    """Open releases of one group lane; see the module's docstring."""

    def __init__(self, group: str, horizon: int = DEFAULT_HORIZON, position: int = 0) -> None:
        if horizon < 1:
            raise WindowError(f"a window's horizon is at least one article, not {horizon}")
        self.group = group
        self.horizon = horizon
        self.position = position  # the next article the lane will read
        self._open: dict[str, ReleaseFragment] = {}

    @property
    def open_releases(self) -> dict[str, ReleaseFragment]:
        return dict(self._open)

    def absorb(self, batch: Batch) -> Batch:
        """Take a batch's fragments in; the batch to post, holding the releases that are done."""
        if batch.from_id < self.position:
            raise WindowError(
                f"batch from article {batch.from_id} is behind the window, which stands at {self.position}: "
                "a lane reads its ranges in article order"
            )
        touched = []
        for fragment in batch.fragments:
            held = self._open.get(fragment.key)
            self._open[fragment.key] = fragment if held is None else merge(held, fragment)
            touched.append(fragment.key)
        self.position = batch.to_id + 1
        done = {key for key in touched if is_complete(self._open[key])}
        cutoff = self.position - self.horizon
        done.update(key for key, release in self._open.items() if release.last_article < cutoff)
        emitted = tuple(self._open.pop(key) for key in sorted(done))
        return Batch(
            from_id=batch.from_id,
            to_id=batch.to_id,
            headers=batch.headers,
            malformed=batch.malformed,
            gaps=batch.gaps,
            undated=batch.undated,
            unmatched=batch.unmatched,
            fragments=emitted,
            candidates=batch.candidates,
            runs=batch.runs,  # loose articles are never held open: each is whole (runs.py)
        )

    def flush(self) -> tuple[ReleaseFragment, ...]:
        """Every open release, emptying the window (the lane is being given up for good)."""
        out = tuple(self._open[key] for key in sorted(self._open))
        self._open.clear()
        return out

    def snapshot(self) -> bytes:
        """The window's state as gzip'd JSON (mtime 0: the same state gives the same bytes)."""
        state: dict[str, Any] = {
            "version": SNAPSHOT_VERSION,
            "group": self.group,
            "horizon": self.horizon,
            "position": self.position,
            "releases": [fragment_to_dict(self._open[key]) for key in sorted(self._open)],
        }
        text = json.dumps(state, separators=(",", ":")).encode()
        return gzip.compress(text, compresslevel=6, mtime=0)

    @classmethod
    def restore(cls, data: bytes, max_inflated: int = MAX_SNAPSHOT_INFLATED) -> Window:
        """The window a snapshot holds; WindowError (saying what is wrong) when it is not one."""
        try:
            text = inflate_whole(data, max_inflated, wbits=31)
        except InflateError as error:
            raise WindowError(f"window snapshot {error}") from None
        try:
            state = json.loads(text)
        except RecursionError:
            raise WindowError("window snapshot nests JSON deeper than a window ever does") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise WindowError(f"window snapshot is not JSON: {error}") from None
        expected = {"version", "group", "horizon", "position", "releases"}
        if not isinstance(state, dict) or set(state) != expected:
            raise WindowError(f"window snapshot must hold exactly {sorted(expected)}")
        if state["version"] != SNAPSHOT_VERSION:
            raise WindowError(
                f"window snapshot version {state['version']!r} is not {SNAPSHOT_VERSION}: "
                "index the lane from its last range start instead"
            )
        group, horizon, position, releases = (state[k] for k in ("group", "horizon", "position", "releases"))
        if not isinstance(group, str) or not isinstance(releases, list):
            raise WindowError("window snapshot: group is a string and releases a list")
        for name, value in (("horizon", horizon), ("position", position)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**63 - 1:
                raise WindowError(f"window snapshot: {name} {value!r} is not an article count")
        window = cls(group, horizon=horizon, position=position)
        try:
            for index, item in enumerate(releases):
                fragment = fragment_from_dict(item, f"releases[{index}]")
                if fragment.key in window._open:
                    raise WindowError(f"window snapshot holds release {fragment.key} twice")
                window._open[fragment.key] = fragment
        except FormatError as error:
            raise WindowError(f"window snapshot: {error}") from None
        return window

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Window):
            return NotImplemented
        return (self.group, self.horizon, self.position, self._open) == (
            other.group,
            other.horizon,
            other.position,
            other._open,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable


__all__ = ["DEFAULT_HORIZON", "Window", "WindowError"]
