"""The public names, and the purity rule: indexing and wire/batch import nothing from I/O packages."""

from __future__ import annotations

import ast
from pathlib import Path

import usenet_indexer.indexing as indexing

IO_PACKAGES = {"db", "leases", "coordinator", "edge", "storage", "nntp", "catalog"}
ROOT = Path(indexing.__file__).parent


def test_exported_names() -> None:
    assert sorted(indexing.__all__) == sorted(set(indexing.__all__))
    for name in indexing.__all__:
        assert hasattr(indexing, name), name
    assert {"RangeIndexer", "Window", "RuleSet", "merge", "pack_segments", "categorize"} <= set(
        indexing.__all__
    )


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_pure_modules_import_no_io_package() -> None:
    files = [*ROOT.glob("*.py"), ROOT.parent / "wire" / "batch.py"]
    assert len(files) > 8
    for path in files:
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "usenet_indexer":
                assert parts[1] not in IO_PACKAGES, f"{path.name} imports {name}"
            assert parts[0] not in {"socket", "sqlalchemy", "psycopg", "httpx", "asyncio"}, (
                f"{path.name}: {name}"
            )
