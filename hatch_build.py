"""Hatch build hook: compiles the indexer's optional C accelerator (accelerator/_speedups.c).

The wheel is built with it when a C compiler and the Python headers are there, and without it otherwise:
a failed compile is a warning, never a failed install, and the indexer then runs its pure-Python loops
(accelerator/__init__.py says which one is in use, and why).

* A regular wheel (``uv build``, ``pip install .``): the extension is compiled in a temporary directory
  and put in the wheel, which is then tagged for this interpreter and platform.
* An editable install (``uv sync``): the extension is compiled next to its source, in
  src/usenet_indexer/accelerator/ (git ignores it), because that is the directory the install imports from.
  The new file replaces the old one by a rename, so a running process keeps the one it loaded.

uv rebuilds the project when the C file changes (``[tool.uv] cache-keys`` in pyproject.toml); to force it:
``uv sync --reinstall-package usenet-indexer``. ``USENET_INDEXER_NO_EXTENSION=1`` at build time skips
the compile.

The compiler is driven directly with the interpreter's own flags (sysconfig: CC, CFLAGS, CCSHARED,
LDSHARED, EXT_SUFFIX), as distutils did, so the build needs nothing but hatchling.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("src/usenet_indexer/accelerator/_speedups.c")
PACKAGE_DIR = "usenet_indexer/accelerator"
COMPILE_TIMEOUT = 300  # seconds; a compiler stuck for longer is treated as missing


class BuildError(Exception):
    """The extension could not be compiled here; the message says why."""


def compile_extension(source: Path, target: Path) -> None:
    """Compile ``source`` into the shared library ``target`` with the running interpreter's flags."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC")
    ldshared = os.environ.get("LDSHARED") or sysconfig.get_config_var("LDSHARED")
    if not cc or not ldshared:
        raise BuildError(
            "this Python's sysconfig names no C compiler (CC/LDSHARED); on Windows, not supported"
        )
    cflags = shlex.split(sysconfig.get_config_var("CFLAGS") or "")
    cflags += shlex.split(sysconfig.get_config_var("CCSHARED") or "")
    cflags += shlex.split(os.environ.get("CFLAGS", ""))
    includes = {sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]}
    if not any(Path(directory, "Python.h").is_file() for directory in includes):
        raise BuildError(
            f"Python.h is not in {', '.join(sorted(includes))} (install the python3-dev package)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        obj = Path(tmp, "_speedups.o")
        built = Path(tmp, target.name)
        _run(
            [
                *shlex.split(cc),
                *cflags,
                *(f"-I{d}" for d in sorted(includes)),
                "-c",
                str(source),
                "-o",
                str(obj),
            ]
        )
        _run(
            [*shlex.split(ldshared), *shlex.split(os.environ.get("LDFLAGS", "")), str(obj), "-o", str(built)]
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        staged.write_bytes(built.read_bytes())
        os.replace(staged, target)  # atomic: a process that loaded the old library keeps it


def _run(command: list[str]) -> None:
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BuildError(f"{command[0]}: {error}") from None
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip().splitlines()
        said = f": {' / '.join(output[-5:])}" if output else ""
        raise BuildError(f"`{shlex.join(command)}` exited with {result.returncode}{said}")


class SpeedupsBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        name = f"_speedups{suffix}"
        source = Path(self.root, SOURCE)
        editable = version == "editable"
        if editable:
            target = source.with_name(name)
        else:
            self._tmp = tempfile.TemporaryDirectory()
            target = Path(self._tmp.name, name)
        if os.environ.get("USENET_INDEXER_NO_EXTENSION") == "1":
            self._without(target, editable, "USENET_INDEXER_NO_EXTENSION=1")
            return
        try:
            compile_extension(source, target)
        except BuildError as error:
            self._without(target, editable, str(error))
            return
        self.app.display_info(f"usenet-indexer: built the C accelerator {PACKAGE_DIR}/{name}")
        if not editable:
            build_data["force_include"][str(target)] = f"{PACKAGE_DIR}/{name}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def _without(self, target: Path, editable: bool, why: str) -> None:
        if editable:
            # A library left from an earlier build would no longer match the source: the pure-Python
            # path is what a failed build promises.
            target.unlink(missing_ok=True)
        self.app.display_warning(
            f"usenet-indexer: the C accelerator was not built ({why}); the pure-Python indexer will be used"
        )

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp is not None:
            tmp.cleanup()
