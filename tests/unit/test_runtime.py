"""runtime.tune_malloc: large blocks stay in malloc's heaps instead of coming back as fresh pages."""

from __future__ import annotations

import platform
import resource
import sys

import pytest

from usenet_indexer import runtime

# Past glibc's largest dynamic mmap threshold (32 MiB): with the defaults every block this size is a
# mapping of its own, given back when freed, and every page of the next one faults in again.
BLOCK = 40 << 20
PAGES = BLOCK // 4096


def _faults_of_a_block() -> int:
    """Minor page faults of this thread while a BLOCK-sized buffer is made, written and dropped."""
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    block = bytearray(BLOCK)  # calloc'd: written here so that every page is touched
    block[::4096] = b"\x01" * PAGES
    del block
    return resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt only"
)
def test_a_large_block_made_again_does_not_fault_in_again() -> None:
    assert runtime.MMAP_THRESHOLD > BLOCK
    assert runtime.tune_malloc()
    _faults_of_a_block()  # the heap grows to hold it once
    faults = [_faults_of_a_block() for _ in range(3)]
    # Without the tuning each of these is ~10,240 faults (one per page); kept in the heap, none or few.
    assert min(faults) < PAGES // 10, faults
