"""Indexing: overview lines to segments, files and releases. Pure: no I/O, no imports from I/O packages.

The names the rest of the project uses are re-exported here; modules:

- overview.py   overview chunks to segments (formats, dates, malformed-line reasons, gaps)
- rules.py      versioned, group-scoped subject rules and the built-in default set
- naming.py     member files, release base names, obfuscation, display names
- par2.py       real file names from a PAR2 index (what the probe reads)
- archive_names.py the first archive volume to probe, by the file names
- archives.py   whether an archive volume's start says passworded
- indexer.py    RangeIndexer: chunks of a leased range to batches of release fragments
- fragment.py   Batch, ReleaseFragment, FileFragment, ProbeCandidate and their dict form
- merge.py      merging fragments (commutative, associative), release totals, the segment blob
- window.py     the open releases of a group lane, with gzip snapshots
- grouping.py   loose files and loose runs joined into releases by poster and posting burst
- runs.py       binary-sized articles no rule reads (fully random subjects), folded into runs
- bursts.py     a burst of loose articles split into files and releases by their bodies
- categories.py newznab categories
- sample.py     realistic generated postings, for tests, the benchmark and demos
"""

from __future__ import annotations

from usenet_indexer.indexing.categories import Category, categorize
from usenet_indexer.indexing.fragment import (
    Batch,
    FileFragment,
    FileSegment,
    FormatError,
    ProbeCandidate,
    ReleaseFragment,
)
from usenet_indexer.indexing.indexer import IndexerError, RangeIndexer, release_key
from usenet_indexer.indexing.merge import (
    MergeError,
    ReleaseTotals,
    SegmentBlobError,
    is_complete,
    merge,
    merge_all,
    pack_segments,
    totals,
    unpack_segments,
)
from usenet_indexer.indexing.naming import FileKind, clean_name
from usenet_indexer.indexing.overview import (
    DEFAULT_FORMAT,
    Overview,
    OverviewFormat,
    Segment,
    parse_date,
    parse_overview,
)
from usenet_indexer.indexing.rules import Rule, RuleError, RuleSet, SubjectMatch, default_rules
from usenet_indexer.indexing.rules import test as test_subject
from usenet_indexer.indexing.window import Window, WindowError

__all__ = [
    "DEFAULT_FORMAT",
    "Batch",
    "Category",
    "FileFragment",
    "FileKind",
    "FileSegment",
    "FormatError",
    "IndexerError",
    "MergeError",
    "Overview",
    "OverviewFormat",
    "ProbeCandidate",
    "RangeIndexer",
    "ReleaseFragment",
    "ReleaseTotals",
    "Rule",
    "RuleError",
    "RuleSet",
    "Segment",
    "SegmentBlobError",
    "SubjectMatch",
    "Window",
    "WindowError",
    "categorize",
    "clean_name",
    "default_rules",
    "is_complete",
    "merge",
    "merge_all",
    "pack_segments",
    "parse_date",
    "parse_overview",
    "release_key",
    "test_subject",
    "totals",
    "unpack_segments",
]
