"""PAR2 recovery volumes named as par2cmdline names them (issue 16). Pure.

Under fully random subjects (or per-file random names with random yEnc names too) no packet names a
recovery volume: the index's File Description packets name the payload files only. par2cmdline names
the files it creates ``<base>.par2`` and ``<base>.volXX+YY.par2``, XX the exponent of the volume's first
recovery slice, YY its number of slices, zero-padded to the digits of the highest exponent end
(first + count) and of the largest count among the set's volumes (``par2 create -c15`` writes
``vol00+1 … vol07+8``; ``-c100`` writes ``vol000+01 … vol063+37``). What tells them, with no name:

- XX: the volume's first Recovery Slice packet header (``par2.recovery_head``), in the first article
  (a packet longer than the article is cut off there: its header is read all the same; the article's
  yEnc CRC vouches for its bytes);
- YY: the whole volume read (its recovery packets counted), else its size: par2cmdline writes YY
  recovery packets of ``64 + 4 + slice size`` bytes, the critical packets (Main, File Descriptions, IFSC)
  as many times as YY has bits, and one Creator packet, all as the index has them, so exactly one YY
  fits a size. A volume another tool laid out otherwise fits none and stays unnamed.

A set is named only when every one of its volumes found has XX and YY: the padding depends on all of
them. A volume never posted at the top of the set could change the padding; nothing in the articles
tells it.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from usenet_indexer.indexing.par2 import RECOVERY_HEADER, Par2Index, RecoveryHead

__all__ = ["Volume", "block_count", "name_volumes", "volume_names"]

K = TypeVar("K", bound=Hashable)


def volume_names(base: str, volumes: Sequence[tuple[int, int]]) -> list[str]:
    """par2cmdline's names for volumes of (first exponent, count), in the order given."""
    if not volumes:
        return []
    low = len(str(max(first + count for first, count in volumes)))
    wide = len(str(max(count for _, count in volumes)))
    return [f"{base}.vol{first:0{low}d}+{count:0{wide}d}.par2" for first, count in volumes]


@dataclass(frozen=True, slots=True)
class Volume:
    """A recovery volume as its first article showed it."""

    head: RecoveryHead
    size: int  # the whole file's (yEnc size=)


def block_count(volume: Volume, index: Par2Index | None) -> int | None:
    """The volume's number of recovery slices (module docstring), None when nothing tells it."""
    head = volume.head
    if head.whole:
        return len(head.exponents)
    if index is None or index.critical_bytes is None or index.slice_size != head.slice_size:
        return None
    packet = RECOVERY_HEADER + head.slice_size
    n = 1
    while n * packet <= volume.size:
        if n * packet + n.bit_length() * index.critical_bytes + index.creator_bytes == volume.size:
            return n
        n += 1
    return None


def name_volumes(base: str, volumes: Mapping[K, Volume], index: Par2Index | None) -> dict[K, str]:
    """Names for the volumes of ``index``'s recovery set (others are left out), or none when one of them
    cannot be told (module docstring)."""
    if index is None or not index.recovery_set_ids:
        return {}
    ours = {k: v for k, v in volumes.items() if v.head.recovery_set_id == index.recovery_set_ids[0]}
    ranges: dict[K, tuple[int, int]] = {}
    for key, volume in ours.items():
        count = block_count(volume, index)
        if count is None or not _contiguous(volume.head.exponents):
            return {}
        ranges[key] = (volume.head.exponents[0], count)
    spans = sorted(ranges.values())
    if any(a + n > b for (a, n), (b, _) in itertools.pairwise(spans)):
        return {}  # two volumes claim one slice: not one par2cmdline set
    keys = list(ranges)
    return dict(zip(keys, volume_names(base, [ranges[k] for k in keys]), strict=True))


def _contiguous(exponents: Sequence[int]) -> bool:
    return all(b == a + 1 for a, b in itertools.pairwise(exponents))
