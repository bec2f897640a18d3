"""The import layering of the package: LAYERS below is the architecture's order, and the code keeps it.

Each module under src/usenet_indexer belongs to the layer of the longest entry naming it or a package
holding it (the root package, ``usenet_indexer``, names only its own ``__init__``). A module may import
what is in its own part and in any layer below; never a layer above, nor another part of its own layer
(the parts of one layer are independent of each other). The pure layers come first and import no I/O
module (FORBIDDEN_IN_PURE). Imports are read with ast, every one of them: inside functions and under
``if TYPE_CHECKING:`` as well, since an import that is only there for the types still ties the two.

A new module either falls under an entry or fails ``test_every_module_has_a_layer``: say where it belongs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT_PACKAGE = "usenet_indexer"
SOURCE = Path(__file__).parents[2] / "src" / ROOT_PACKAGE


@dataclass(frozen=True)
class Layer:
    name: str
    parts: tuple[tuple[str, ...], ...]  # independent siblings: one part imports nothing of another
    pure: bool = False


def layer(name: str, *parts: Sequence[str], pure: bool = False) -> Layer:
    return Layer(name, tuple(tuple(part) for part in parts), pure)


P = ROOT_PACKAGE
# Lowest first.
LAYERS: tuple[Layer, ...] = (
    # -- pure: no I/O ------------------------------------------------------------------------------
    layer(
        "foundations",
        # leases.errors: the lease errors alone (the store raises Fenced; a worker imports it without
        # the store)
        [
            P,
            f"{P}.articles",
            f"{P}.compression",
            f"{P}.extras",
            f"{P}.passwords",
            f"{P}.leases.errors",
            f"{P}.readable",
        ],
        pure=True,
    ),
    layer("the accelerator", [f"{P}.accelerator"], pure=True),  # used by both indexing and nntp
    layer(
        "pure cores",
        # nntp's sans-I/O protocol core: the package and all but its transport (below)
        [f"{P}.nntp"],
        [f"{P}.indexing"],
        [f"{P}.leases.planning"],  # pure: what to plan, beside the leases it plans
        pure=True,
    ),
    layer("the wire", [f"{P}.wire"], pure=True),
    # -- I/O -----------------------------------------------------------------------------------------
    layer("the process", [f"{P}.logs", f"{P}.runtime"]),
    layer(
        "adapters",
        [f"{P}.db"],
        [f"{P}.storage"],
        [f"{P}.nntp.client", f"{P}.nntp.pool", f"{P}.nntp._transport", f"{P}.nntp.choice"],
    ),
    layer("settings", [f"{P}.settings"]),
    layer(
        "the store's logic",
        [f"{P}.leases"],
        [f"{P}.catalog"],
        [f"{P}.newsservers"],
    ),
    layer(
        "the coordinator's registries; the edge worker",
        [
            f"{P}.coordinator.registries",
            f"{P}.coordinator.arrivals",
        ],
        # beside the coordinator's lowest layer: neither imports the other (an edge needs only its
        # coordinator's URL and its node token)
        [f"{P}.edge"],
    ),
    layer("the coordinator's composition root", [f"{P}.coordinator.wiring"]),
    layer(
        "the coordinator's loops",
        [f"{P}.coordinator.loops"],
    ),
    layer("the coordinator's HTTP", [f"{P}.coordinator"]),  # the rest of coordinator/
    layer("one machine", [f"{P}.local"]),
    layer("commands", [f"{P}.cli", f"{P}.__main__"]),
)

# What a pure layer may not import: sockets, processes, threads, databases, HTTP, object storage.
FORBIDDEN_IN_PURE = frozenset(
    {
        "asyncio",
        "socket",
        "ssl",
        "selectors",
        "threading",
        "multiprocessing",
        "concurrent",
        "subprocess",
        "sqlite3",
        "http",
        "urllib",
        "psycopg",
        "psycopg_pool",
        "sqlalchemy",
        "alembic",
        "httpx",
        "boto3",
        "botocore",
        "fastapi",
        "starlette",
        "uvicorn",
        "pydantic_settings",
    }
)

# Wrong-way imports tolerated for a while, as (importer, imported): none since issue 19; keep it so.
ALLOWED: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Place:
    layer: int
    part: int


def module_name(path: Path, root: Path) -> str:
    """``usenet_indexer.indexing.rules`` for root/indexing/rules.py (root is the package's folder)."""
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    found = {module_name(path, root): path for path in sorted(root.rglob("*.py"))}
    # a stub (.pyi) of an extension module is read as that module
    stubs = {module_name(path, root): path for path in sorted(root.rglob("*.pyi"))}
    return {**stubs, **found}


def imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """Each module ``name`` imports (absolute; of any package), with its line."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:  # `from pkg import module` imports the module
                sub = f"{source}.{alias.name}"
                yield (sub if sub in known else source), node.lineno


def place(module: str, layers: Sequence[Layer], root_package: str) -> Place | None:
    best: tuple[int, Place] | None = None
    for number, each in enumerate(layers):
        for part_number, part in enumerate(each.parts):
            for entry in part:
                if entry == root_package:
                    matches = module == entry  # the root names only its __init__
                else:
                    matches = module == entry or module.startswith(f"{entry}.")
                if matches and (best is None or len(entry) > best[0]):
                    best = (len(entry), Place(number, part_number))
    return None if best is None else best[1]


def violations(
    root: Path,
    layers: Sequence[Layer],
    allowed: frozenset[tuple[str, str]] = frozenset(),
    forbidden_in_pure: frozenset[str] = FORBIDDEN_IN_PURE,
) -> list[str]:
    """Every import that breaks the layering, as ``importer:line imports imported (why)``."""
    root_package = root.name
    found = modules(root)
    known = set(found)
    wrong: list[str] = []
    for name, path in found.items():
        here = place(name, layers, root_package)
        if here is None:
            wrong.append(f"{name} is in no layer (add it to LAYERS)")
            continue
        for target, line in sorted(set(imports(name, path, known))):
            top = target.split(".")[0]
            if layers[here.layer].pure and top in forbidden_in_pure:
                wrong.append(f"{name}:{line} imports {target} (an I/O module, in a pure layer)")
            if top != root_package or (name, target) in allowed:
                continue
            there = place(target, layers, root_package)
            if there is None:
                continue  # reported as a module in no layer
            if there.layer > here.layer:
                wrong.append(
                    f"{name}:{line} imports {target} "
                    f"({layers[there.layer].name} is above {layers[here.layer].name})"
                )
            elif there.layer == here.layer and there.part != here.part:
                wrong.append(f"{name}:{line} imports {target} (another part of {layers[here.layer].name})")
    return wrong


def test_the_package_keeps_its_layers() -> None:
    assert violations(SOURCE, LAYERS, ALLOWED) == []


def test_every_module_has_a_layer_and_every_entry_a_module() -> None:
    names = set(modules(SOURCE))
    assert [name for name in sorted(names) if place(name, LAYERS, ROOT_PACKAGE) is None] == []
    entries = [entry for each in LAYERS for part in each.parts for entry in part]
    assert [e for e in entries if not any(n == e or n.startswith(f"{e}.") for n in names)] == []
    assert len(entries) == len(set(entries))


def test_pure_layers_come_first() -> None:
    purity = [each.pure for each in LAYERS]
    assert purity == sorted(purity, reverse=True)


def test_the_allowances_are_still_needed() -> None:
    # an allowance whose import is gone must go too, so the list only shrinks
    found = modules(SOURCE)
    present = {
        (name, target) for name, path in found.items() for target, _ in imports(name, path, set(found))
    }
    assert sorted(ALLOWED - present) == []


# -- the checker itself, on a crafted package --------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


CRAFTED = (
    layer("base", ["pkg", "pkg.core"], ["pkg.other"], pure=True),
    layer("io", ["pkg.io"]),
    layer("top", ["pkg.app"]),
)


def test_a_tree_that_keeps_its_layers_passes(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "core/__init__.py": "import re\n",
            "core/rules.py": "from pkg.core import helpers\nfrom . import helpers as again\n",
            "core/helpers.py": "",
            "other.py": "import hashlib\n",
            "io.py": "import socket\nfrom pkg.core.rules import x\nimport pkg.other\n",
            "app.py": "from pkg import io, core\n",
        },
    )
    assert violations(root, CRAFTED) == []


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (  # an import of a layer above, even a lazy one inside a function
            {"core.py": "def f() -> None:\n    from pkg.io import x\n", "io.py": "x = 1\n"},
            "pkg.core:2 imports pkg.io (io is above base)",
        ),
        (  # a relative import reaching up
            {"io.py": "from . import app\n", "app.py": ""},
            "pkg.io:1 imports pkg.app (top is above io)",
        ),
        (  # an import only for the types still counts
            {
                "core.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.app\n",
                "app.py": "",
            },
            "pkg.core:3 imports pkg.app (top is above base)",
        ),
        (  # two independent parts of one layer
            {"core.py": "from pkg.other import y\n", "other.py": "y = 1\n"},
            "pkg.core:1 imports pkg.other (another part of base)",
        ),
        (  # I/O in a pure layer
            {"other.py": "import asyncio\n"},
            "pkg.other:1 imports asyncio (an I/O module, in a pure layer)",
        ),
        (  # a module nobody placed
            {"stray.py": ""},
            "pkg.stray is in no layer (add it to LAYERS)",
        ),
    ],
)
def test_the_checker_finds_a_wrong_way_import(tmp_path: Path, files: dict[str, str], expected: str) -> None:
    assert violations(_package(tmp_path, files), CRAFTED) == [expected]


def test_an_allowance_silences_exactly_its_import(tmp_path: Path) -> None:
    root = _package(tmp_path, {"core.py": "import pkg.io\nimport pkg.app\n", "io.py": "", "app.py": ""})
    assert violations(root, CRAFTED, frozenset({("pkg.core", "pkg.io")})) == [
        "pkg.core:2 imports pkg.app (top is above base)"
    ]
