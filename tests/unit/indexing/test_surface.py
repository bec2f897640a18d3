"""The public names (the purity of indexing and wire is checked by tests/unit/test_layering.py)."""

from __future__ import annotations

import usenet_indexer.indexing as indexing


def test_exported_names() -> None:
    assert sorted(indexing.__all__) == sorted(set(indexing.__all__))
    for name in indexing.__all__:
        assert hasattr(indexing, name), name
    assert {"RangeIndexer", "Window", "RuleSet", "merge", "pack_segments", "categorize"} <= set(
        indexing.__all__
    )
